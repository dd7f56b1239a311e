# SPDX-License-Identifier: GPL-2.0-only
#
# zcx: kernel module, library, selftests.  "make help" lists the targets.

TOP     := $(abspath $(dir $(lastword $(MAKEFILE_LIST))))
BUILD   := $(TOP)/build
VERSION := $(shell sed -n 's/^PACKAGE_VERSION="*\([^"]*\)"*$$/\1/p' $(TOP)/dkms.conf)
SOVERSION := 1
# The library's own version; its major is the SONAME's.
LIB_VERSION := $(SOVERSION).0.0

# Kernel to build the module for: the newest installed one by default.
KVER ?= $(shell $(TOP)/scripts/kernels.sh 6.12 2>/dev/null || uname -r)
KDIR ?= /lib/modules/$(KVER)/build

# Installation directories ("make install"; README, "Installing").
# System configuration lives in /etc whatever the prefix: udev and
# modules-load.d read nothing under /usr/local.
PREFIX  ?= /usr/local
BINDIR  ?= $(PREFIX)/bin
LIBDIR  ?= $(PREFIX)/lib
INCLUDEDIR ?= $(PREFIX)/include
DATADIR ?= $(PREFIX)/share
MANDIR  ?= $(DATADIR)/man
DOCDIR  ?= $(DATADIR)/doc/zcx
PKGCONFIGDIR ?= $(LIBDIR)/pkgconfig
SYSCONFDIR ?= /etc
UDEVDIR ?= $(SYSCONFDIR)/udev
DESTDIR ?=

CC      ?= cc
WARN    := -Wall -Wextra -Werror
CFLAGS  ?= -O2 -g
# CPPFLAGS and LDFLAGS as a distribution passes them (hardening).
LIB_CFLAGS := -std=c11 $(WARN) $(CPPFLAGS) $(CFLAGS) -fPIC -fvisibility=hidden \
	      -I$(TOP)/uapi -I$(TOP)/libshim

# libshim/verbs*.c are libzcx-verbs and its interposer, and pmix.c is
# libzcx-pmix: libraries of their own (they need libibverbs, libpmix).
LIB_SRCS := $(filter-out $(TOP)/libshim/verbs% $(TOP)/libshim/pmix.c,\
	      $(wildcard $(TOP)/libshim/*.c))
LIB_HDRS := $(wildcard $(TOP)/libshim/*.h) $(TOP)/uapi/zcx_uapi.h
LIB_OBJS := $(patsubst $(TOP)/libshim/%.c,$(BUILD)/lib/%.o,$(LIB_SRCS))
LIB_SO   := $(BUILD)/lib/libzcx.so.$(LIB_VERSION)
LIB_A    := $(BUILD)/lib/libzcx.a
LIB_PC   := $(BUILD)/lib/libzcx.pc
KTOOLS   := $(BUILD)/ktools

.PHONY: all lib verbs pmix module clean-module selftests examples zcxctl zcx_soak zcx_twonode bench bench-all bench-reg bench-verbs \
	bench-xfer bench-net bench-pairs bench-poll check check-quick demo \
	vm-shell ktools dkms-install dkms-uninstall install uninstall deb clean help

all: lib verbs pmix selftests examples zcxctl

help:
	@echo "make                 library and selftests (userspace)"
	@echo "make zcxctl          the operations tool, build/tools/zcxctl (needs libnl-genl-3-dev)"
	@echo "make zcx_soak        the soak program, build/tools/zcx_soak (scripts/soak.sh runs it)"
	@echo "make zcx_twonode     the two-node test, build/tools/zcx_twonode (scripts/vm-twonode.sh)"
	@echo "make module          zcx.ko for KVER (default $(KVER)) in build/kmod-KVER"
	@echo "make check           everything, both kernels, in QEMU (what CI runs)"
	@echo "make check-quick     6.12 only, module from the tree, no DKMS/lint"
	@echo "make demo            load zcx.ko in a 6.12 guest and query it"
	@echo "make vm-shell        interactive shell in a guest with zcx loaded"
	@echo "make dkms-install    install the module on this machine through DKMS"
	@echo "make dkms-uninstall  remove that registration and /usr/src/zcx-VERSION"
	@echo "make install         libraries, headers, pkg-config, zcxctl, udev rule,"
	@echo "                     man pages (PREFIX=$(PREFIX), DESTDIR=...)"
	@echo "make uninstall       remove what make install installed (same variables)"
	@echo "make deb             Debian packages into build/deb/ (dpkg-buildpackage)"
	@echo "make bench-all       the whole benchmark suite: zcx and its peers, guest and host,"
	@echo "                     tables, CSV and plots -> results/ (BENCH_FLAGS=-q: quick)"
	@echo "make bench-reg       registration benchmark in a 6.12 guest -> results/"
	@echo "make bench-verbs     register-per-message over Soft-RoCE -> results/"
	@echo "make bench-xfer      latency, bandwidth, barrier vs UCX, CMA, MPI -> results/"
	@echo "make bench-net       zcx through zcx_ib vs perftest on Soft-RoCE -> results/"
	@echo "make bench-pairs     zcx vs UCX posix,cma and CMA over many process pairs -> results/"
	@echo "make bench-poll      system calls per message in polling mode, 2 and 4 vCPUs -> results/"

# --- kernel module ---------------------------------------------------------

module:
	$(TOP)/scripts/kmod-build.sh $(KVER) $(KDIR) $(BUILD)/kmod-$(KVER)

clean-module:
	rm -rf $(BUILD)/kmod-*

dkms-install:
	$(TOP)/scripts/dkms-install.sh $(KVER)

dkms-uninstall:
	$(TOP)/scripts/dkms-install.sh --remove

# --- library ---------------------------------------------------------------

lib: $(LIB_SO) $(LIB_A) $(LIB_PC)

$(BUILD)/lib/%.o: $(TOP)/libshim/%.c $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) -c $< -o $@

$(LIB_SO): $(LIB_OBJS) $(TOP)/libshim/libzcx.map
	$(CC) $(LDFLAGS) -shared -Wl,-soname,libzcx.so.$(SOVERSION) \
		-Wl,--version-script=$(TOP)/libshim/libzcx.map -o $@ $(LIB_OBJS)
	ln -sf $(notdir $@) $(BUILD)/lib/libzcx.so.$(SOVERSION)
	ln -sf libzcx.so.$(SOVERSION) $(BUILD)/lib/libzcx.so

$(LIB_A): $(LIB_OBJS)
	rm -f $@
	$(AR) rcs $@ $^

PC_SED = sed -e 's|@PREFIX@|$(PREFIX)|' -e 's|@LIBDIR@|$(LIBDIR)|' \
	    -e 's|@INCLUDEDIR@|$(INCLUDEDIR)|' -e 's|@VERSION@|$(VERSION)|'

$(LIB_PC): $(TOP)/libshim/libzcx.pc.in $(TOP)/dkms.conf
	@mkdir -p $(dir $@)
	$(PC_SED) $< > $@

# --- libzcx-verbs (needs libibverbs-dev) ------------------------------------
#
# No rpath (it gets installed): programs in the tree that use it link
# -lzcx too, with an rpath of their own, so libzcx.so.1 is loaded already.

VLIB_SO := $(BUILD)/lib/libzcx-verbs.so.$(LIB_VERSION)
VLIB_PRELOAD := $(BUILD)/lib/libzcx-verbs-preload.so

verbs: $(VLIB_SO) $(VLIB_PRELOAD)

$(VLIB_SO): $(TOP)/libshim/verbs.c $(TOP)/libshim/libzcx-verbs.map $(LIB_HDRS) $(LIB_SO)
	$(CC) $(LIB_CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libzcx-verbs.so.$(SOVERSION) \
		-Wl,--version-script=$(TOP)/libshim/libzcx-verbs.map -o $@ $< \
		-L$(BUILD)/lib -lzcx -libverbs
	ln -sf $(notdir $@) $(BUILD)/lib/libzcx-verbs.so.$(SOVERSION)
	ln -sf libzcx-verbs.so.$(SOVERSION) $(BUILD)/lib/libzcx-verbs.so

# The interposer carries everything it needs: LD_PRELOAD=it, nothing else.
# It needs libibverbs itself (dlsym(RTLD_NEXT) finds the real calls only
# in what loaded at start, and a program may dlopen() verbs privately),
# and exports only the calls it interposes.
$(VLIB_PRELOAD): $(TOP)/libshim/verbs_preload.c $(TOP)/libshim/verbs.c $(LIB_SRCS) $(LIB_HDRS) \
		$(TOP)/libshim/libzcx-verbs-preload.map
	$(CC) $(LIB_CFLAGS) $(LDFLAGS) -shared -o $@ $(TOP)/libshim/verbs_preload.c \
		$(TOP)/libshim/verbs.c $(LIB_SRCS) \
		-Wl,--version-script=$(TOP)/libshim/libzcx-verbs-preload.map \
		-Wl,--push-state,--no-as-needed -libverbs -Wl,--pop-state -ldl

# --- libzcx-pmix (needs libpmix-dev) ---------------------------------------

PLIB_SO := $(BUILD)/lib/libzcx-pmix.so.$(LIB_VERSION)
PMIX_CFLAGS := $(shell pkg-config --cflags pmix 2>/dev/null)
# Without the launcher's rpath: libpmix.so.2 is also in the default path.
PMIX_LIBS := -lpmix

pmix: $(PLIB_SO)

# It calls libzcx (zcx_group_*): linked to it, so that it needs it.
$(PLIB_SO): $(TOP)/libshim/pmix.c $(TOP)/libshim/libzcx-pmix.map $(LIB_HDRS) $(LIB_SO)
	@mkdir -p $(dir $@)
	$(CC) $(LIB_CFLAGS) $(PMIX_CFLAGS) $(LDFLAGS) -shared \
		-Wl,-soname,libzcx-pmix.so.$(SOVERSION) \
		-Wl,--version-script=$(TOP)/libshim/libzcx-pmix.map -o $@ $< $(PMIX_LIBS) \
		-L$(BUILD)/lib -lzcx
	ln -sf $(notdir $@) $(BUILD)/lib/libzcx-pmix.so.$(SOVERSION)
	ln -sf libzcx-pmix.so.$(SOVERSION) $(BUILD)/lib/libzcx-pmix.so

# --- examples --------------------------------------------------------------

EXAMPLES := $(patsubst $(TOP)/examples/%.c,$(BUILD)/examples/%,\
	      $(filter-out %/zcx_verbs_perf.c %/zcx_pmix_ring.c,$(wildcard $(TOP)/examples/*.c)))

examples: $(BUILD)/examples/zcx_verbs_perf $(BUILD)/examples/zcx_pmix_ring

$(BUILD)/examples/zcx_pmix_ring: $(TOP)/examples/zcx_pmix_ring.c $(PLIB_SO) $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) \
		-I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx-pmix -lzcx

# The verbs example shares the selftests' Soft-RoCE loopback helper.
$(BUILD)/examples/zcx_verbs_perf: $(TOP)/examples/zcx_verbs_perf.c $(VLIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -I$(TOP)/uapi -I$(TOP)/libshim -I$(TOP)/selftests \
		$< -o $@ -L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx-verbs -lzcx -libverbs

examples: $(EXAMPLES)

# Linked as a user would, against the shared library (rpath to build/lib).
$(BUILD)/examples/%: $(TOP)/examples/%.c $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) \
		-I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx

# --- zcxctl (needs libnl-genl-3-dev) ---------------------------------------

ZCXCTL := $(BUILD)/tools/zcxctl
NL_CFLAGS = $(shell pkg-config --cflags libnl-genl-3.0)
NL_LIBS = $(shell pkg-config --libs libnl-genl-3.0)

zcxctl: $(ZCXCTL)

$(ZCXCTL): $(TOP)/tools/zcxctl.c $(TOP)/uapi/zcx_uapi.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) $(CPPFLAGS) $(CFLAGS) $(LDFLAGS) -I$(TOP)/uapi $(NL_CFLAGS) $< -o $@ \
		$(NL_LIBS)

# The soak program (scripts/soak.sh runs it under memory churn in a guest).
ZCX_SOAK := $(BUILD)/tools/zcx_soak

zcx_soak: $(ZCX_SOAK)

$(ZCX_SOAK): $(TOP)/tools/zcx_soak.c $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx

# The two-node test (scripts/vm-twonode.sh runs it in two guests).
ZCX_TWONODE := $(BUILD)/tools/zcx_twonode

zcx_twonode: $(ZCX_TWONODE)

$(ZCX_TWONODE): $(TOP)/tools/zcx_twonode.c $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx

# Ranks of a job whose group fails in one rank, or that trades through two
# job handles (selftests/zcx_pmix_test.sh runs it under mpirun); built with
# the selftests.
ZCX_PMIX_CHECK := $(BUILD)/tools/zcx_pmix_group_check

selftests: $(ZCX_PMIX_CHECK)

$(ZCX_PMIX_CHECK): $(TOP)/tools/zcx_pmix_group_check.c $(PLIB_SO) $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -D_POSIX_C_SOURCE=200809L $(WARN) $(CFLAGS) \
		-I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx-pmix -lzcx

# --- zcx_fuzz: the seeded fuzzer (raw ioctls; scripts/fuzz.sh runs it) -----

ZCX_FUZZ := $(BUILD)/tools/zcx_fuzz
FUZZ_SRCS := $(TOP)/tools/zcx_fuzz.c $(wildcard $(TOP)/tools/fuzz/*.c)

zcx_fuzz: $(ZCX_FUZZ)

# Built with zcxctl and the selftests (selftests/zcx_fuzz_test.sh runs it).
zcxctl selftests: $(ZCX_FUZZ)

$(ZCX_FUZZ): $(FUZZ_SRCS) $(TOP)/tools/fuzz/fuzz.h $(TOP)/uapi/zcx_uapi.h $(TOP)/selftests/zcx_test.h
	@mkdir -p $(dir $@)
	$(CC) -std=c11 $(WARN) $(CFLAGS) -I$(TOP)/uapi -I$(TOP)/selftests -I$(TOP)/tools/fuzz \
		$(FUZZ_SRCS) -o $@ -lpthread

.PHONY: zcx_fuzz

# --- benchmarks ------------------------------------------------------------

# reg_bench measures ibv_reg_mr too when libibverbs is installed.
VERBS_LIBS := $(shell pkg-config --libs libibverbs 2>/dev/null)
BENCH_VERBS := $(if $(VERBS_LIBS),-DHAVE_VERBS)

bench: $(BUILD)/bench/reg_bench

$(BUILD)/bench/reg_bench: $(TOP)/bench/reg_bench.c $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) $(BENCH_VERBS) -I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx $(VERBS_LIBS)

# The transport benchmark: zcx (xfer_bench) and its references, the kernel's
# single copy and memcpy (peer_bench) and Open MPI (mpi_bench, only where
# mpicc is installed: openmpi-bin, libopenmpi-dev).
MPICC ?= mpicc
HAVE_MPICC := $(shell command -v $(MPICC) 2>/dev/null)
XFER_BENCHES := $(BUILD)/bench/xfer_bench $(BUILD)/bench/peer_bench \
		$(if $(HAVE_MPICC),$(BUILD)/bench/mpi_bench)

bench: $(XFER_BENCHES)

$(BUILD)/bench/xfer_bench: $(TOP)/bench/xfer_bench.c $(TOP)/bench/xfer_common.h $(LIB_SO) $(LIB_HDRS)
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) -I$(TOP)/uapi -I$(TOP)/libshim $< -o $@ \
		-L$(BUILD)/lib -Wl,-rpath,$(BUILD)/lib -lzcx

$(BUILD)/bench/peer_bench: $(TOP)/bench/peer_bench.c $(TOP)/bench/xfer_common.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 $(WARN) $(CFLAGS) $< -o $@

$(BUILD)/bench/mpi_bench: $(TOP)/bench/mpi_bench.c $(TOP)/bench/xfer_common.h
	@mkdir -p $(dir $@)
	$(MPICC) -std=gnu11 $(WARN) $(CFLAGS) $< -o $@

# The whole suite in one guest boot plus the host's peers (scripts/bench-suite.sh -h).
bench-all:
	$(TOP)/scripts/bench-suite.sh $(BENCH_FLAGS)

bench-reg:
	$(TOP)/scripts/bench-reg.sh

bench-verbs:
	$(TOP)/scripts/bench-verbs.sh

bench-xfer:
	$(TOP)/scripts/bench-xfer.sh

bench-net:
	$(TOP)/scripts/bench-net.sh

bench-pairs:
	$(TOP)/scripts/bench-pairs.sh

bench-poll:
	$(TOP)/scripts/bench-poll.sh

# --- selftests -------------------------------------------------------------

ktools:
	$(TOP)/scripts/kernel-tools.sh $(KTOOLS)

selftests: ktools
	$(MAKE) -C $(TOP)/selftests OUTPUT=$(BUILD)/selftests \
		KSFT_DIR=$(KTOOLS)/tools/testing/selftests ZCX_TOP=$(TOP)

# --- installation ----------------------------------------------------------
#
# "make install" puts what a user of the libraries and an administrator
# need under PREFIX (the udev rule under UDEVDIR/rules.d), staged under
# DESTDIR if given; "make uninstall" with the same variables removes
# exactly those files (directories it did not create itself stay).
# The interposer is not a library to link with: LIBDIR/zcx/.  The
# module is not installed here: that is DKMS's job (make dkms-install, or
# the zcx-dkms package).

# Section-3 pages, and NAME:PAGE for each other name a page documents
# (a '.\" link: NAME...' comment in the page), installed as .so links.
MAN3_PAGES := $(wildcard $(TOP)/man/*.3)
MAN3_LINKS := $(foreach p,$(MAN3_PAGES),$(addsuffix :$(basename $(notdir $(p))),\
	$(shell sed -n 's/^\.\\" link: //p' $(p))))

INST_LIB   := $(DESTDIR)$(LIBDIR)
INST_FILES := $(addprefix $(INST_LIB)/,libzcx.so.$(LIB_VERSION) libzcx.so.$(SOVERSION) \
		libzcx.so libzcx.a libzcx-verbs.so.$(LIB_VERSION) \
		libzcx-verbs.so.$(SOVERSION) libzcx-verbs.so zcx/libzcx-verbs-preload.so \
		libzcx-pmix.so.$(LIB_VERSION) libzcx-pmix.so.$(SOVERSION) libzcx-pmix.so) \
	$(addprefix $(DESTDIR)$(INCLUDEDIR)/,zcx.h zcx_uapi.h zcx_verbs.h zcx_pmix.h) \
	$(DESTDIR)$(PKGCONFIGDIR)/libzcx.pc \
	$(DESTDIR)$(UDEVDIR)/rules.d/60-zcx.rules \
	$(DESTDIR)$(DOCDIR)/examples/modules-load.d/zcx.conf \
	$(patsubst $(TOP)/man/%,$(DESTDIR)$(MANDIR)/man3/%,$(MAN3_PAGES)) \
	$(foreach l,$(MAN3_LINKS),$(DESTDIR)$(MANDIR)/man3/$(firstword $(subst :, ,$(l))).3) \
	$(DESTDIR)$(BINDIR)/zcxctl $(DESTDIR)$(MANDIR)/man8/zcxctl.8

install: lib verbs pmix zcxctl
	install -d $(INST_LIB)/zcx $(DESTDIR)$(INCLUDEDIR) $(DESTDIR)$(PKGCONFIGDIR) \
		$(DESTDIR)$(UDEVDIR)/rules.d $(DESTDIR)$(DOCDIR)/examples/modules-load.d \
		$(DESTDIR)$(MANDIR)/man3
	install -m 755 $(LIB_SO) $(VLIB_SO) $(PLIB_SO) $(INST_LIB)/
	install -m 755 $(VLIB_PRELOAD) $(INST_LIB)/zcx/
	install -m 644 $(LIB_A) $(INST_LIB)/
	ln -sf libzcx.so.$(LIB_VERSION) $(INST_LIB)/libzcx.so.$(SOVERSION)
	ln -sf libzcx.so.$(SOVERSION) $(INST_LIB)/libzcx.so
	ln -sf libzcx-verbs.so.$(LIB_VERSION) $(INST_LIB)/libzcx-verbs.so.$(SOVERSION)
	ln -sf libzcx-verbs.so.$(SOVERSION) $(INST_LIB)/libzcx-verbs.so
	ln -sf libzcx-pmix.so.$(LIB_VERSION) $(INST_LIB)/libzcx-pmix.so.$(SOVERSION)
	ln -sf libzcx-pmix.so.$(SOVERSION) $(INST_LIB)/libzcx-pmix.so
	install -m 644 $(TOP)/libshim/zcx.h $(TOP)/uapi/zcx_uapi.h $(TOP)/libshim/zcx_verbs.h \
		$(TOP)/libshim/zcx_pmix.h $(DESTDIR)$(INCLUDEDIR)/
	$(PC_SED) $(TOP)/libshim/libzcx.pc.in > $(DESTDIR)$(PKGCONFIGDIR)/libzcx.pc
	chmod 644 $(DESTDIR)$(PKGCONFIGDIR)/libzcx.pc
	install -m 644 $(TOP)/udev/60-zcx.rules $(DESTDIR)$(UDEVDIR)/rules.d/
	install -m 644 $(TOP)/udev/modules-load.conf \
		$(DESTDIR)$(DOCDIR)/examples/modules-load.d/zcx.conf
	install -m 644 $(MAN3_PAGES) $(DESTDIR)$(MANDIR)/man3/
	$(foreach l,$(MAN3_LINKS),echo '.so man3/$(lastword $(subst :, ,$(l))).3' \
		> $(DESTDIR)$(MANDIR)/man3/$(firstword $(subst :, ,$(l))).3 &&) true
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(MANDIR)/man8
	install -m 755 $(ZCXCTL) $(DESTDIR)$(BINDIR)/zcxctl
	install -m 644 $(TOP)/man/zcxctl.8 $(DESTDIR)$(MANDIR)/man8/
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
		ldconfig; fi

uninstall:
	rm -f $(INST_FILES)
	-rmdir $(INST_LIB)/zcx $(DESTDIR)$(DOCDIR)/examples/modules-load.d \
		$(DESTDIR)$(DOCDIR)/examples $(DESTDIR)$(DOCDIR) 2>/dev/null
	@if [ -z "$(DESTDIR)" ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
		ldconfig; fi

# Debian packages (zcx-dkms, libzcx1, libzcx-verbs1, libzcx-pmix1, libzcx-dev,
# zcx-utils).
deb:
	$(TOP)/scripts/deb-build.sh

# --- tests and demo in QEMU ------------------------------------------------

check:
	$(TOP)/scripts/check.sh

check-quick:
	ZCX_QUICK=1 $(TOP)/scripts/check.sh

demo: lib
	$(TOP)/scripts/demo.sh

vm-shell:
	$(TOP)/scripts/vm-run.sh --kernel $(KVER) --shell

clean:
	rm -rf $(BUILD)
