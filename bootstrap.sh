#!/usr/bin/env bash
# One entry point for a fresh Debian machine (as root): install what inaemu needs, then run it.
#
#   ./bootstrap.sh run [ARGS]  the main job: `inaemu run` (INA vs ring on Mininet; see README.md)
#   ./bootstrap.sh test        the whole test suite (what CI runs), in parallel
#   ./bootstrap.sh test --quick  the edit loop: no Mininet, BMv2 batches or slow tests
#   ./bootstrap.sh setup       only the set-up
#   ./bootstrap.sh -- CMD...   run CMD inside the project's virtualenv
#
# Set-up is idempotent and quick when everything is already there.
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$(pwd)
VENV="$ROOT/.venv"
# gcc, libc6-dev and python3-dev: the switch builds its packet code as C by default (Python.h and
# a C compiler; docs/runtime.md); without them it falls back to Python and says so.
# openssh-*, sudo: the Mininet cluster (docs/cluster.md); openssl: certificates for P4Runtime
# over TLS (the tests make theirs with it; docs/cluster.md's recipe); git: scripts/p4c_samples.py
# reads p4c's samples from a checkout or a bare git directory (its test makes one).
APT_PACKAGES=(mininet iproute2 iputils-ping iperf3 tcpdump ethtool procps psmisc python3-venv
              gcc libc6-dev python3-dev
              openssh-server openssh-client sudo openssl git)

say() { printf '[bootstrap] %s\n' "$*" >&2; }

install_apt() {
    local missing=()
    for p in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -ne 0 ]; then
        say "missing system packages: ${missing[*]} (run as root, or: apt-get install ${missing[*]})"
        return 0
    fi
    say "apt-get install ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

install_python() {
    local stamp="$VENV/.inaemu-installed"
    if [ ! -x "$VENV/bin/python" ]; then
        say "creating virtualenv in .venv"
        python3 -m venv "$VENV"
    fi
    if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
        say "installing inaemu and its pinned dependencies"
        # p4runtime-shell comes without its own pins (protobuf<3.21 would hold everything on
        # pure-Python protobuf); what it needs besides is in pyproject.toml (docs/p4runtime.md).
        # --no-warn-conflicts: pip would otherwise call exactly that an ERROR on every set-up.
        "$VENV/bin/pip" install -q --disable-pip-version-check --no-warn-conflicts \
            -e ".[test,cluster,torch]"
        "$VENV/bin/pip" install -q --disable-pip-version-check --no-warn-conflicts --no-deps \
            p4runtime-shell==0.0.6
        touch "$stamp"
    fi
    # the p4runtime wheel's generated modules in the form current protobuf loads (idempotent,
    # and again after anything reinstalled the wheel)
    "$VENV/bin/python" -m controller.p4runtime_gencode >/dev/null
}

setup() { install_apt; install_python; }

action=${1:-run}
[ $# -gt 0 ] && shift
case "$action" in
    setup) setup ;;
    run|demo)
        setup
        exec "$VENV/bin/inaemu" run "$@" ;;
    test)
        setup
        # in parallel (pytest-xdist): a test file is one unit of work, every root (Mininet,
        # namespace) test is in one unit of its own, run serially (tests/conftest.py);
        # pytest's exit 5 means no test ran: a failure, never a success. A worker that dies (a
        # crash in C) ends the run, naming its test: pytest-xdist 3.8 replaces a crashed worker
        # under loadgroup and then waits for ever (pytest-xdist issues 1323, 1378)
        PYTEST=("$VENV/bin/python" -m pytest -q -p no:cacheprovider -n "${INAEMU_TEST_WORKERS:-auto}"
                --dist loadgroup --no-loadscope-reorder --max-worker-restart 0)
        if [ "${1:-}" = "--quick" ]; then
            # the edit loop: no Mininet, namespaces, BMv2 batches or other slow tests
            shift
            exec "${PYTEST[@]}" -m "not root and not slow" "$@"
        fi
        if [ $# -eq 0 ]; then
            # the whole suite runs the packet code as C where it builds (docs/runtime.md), the
            # differential suites against BMv2 included; the runtime's own suites run once more
            # on the Python code, the fallback where no C compiler is
            "${PYTEST[@]}" || exit $?
            say "again on the Python packet code (INAEMU_NATIVE=0): runtime, STF, ina.p4"
            INAEMU_NATIVE=0 exec "${PYTEST[@]}" tests/runtime tests/stf tests/ina
        fi
        exec "${PYTEST[@]}" "$@" ;;
    --)
        setup
        PATH="$VENV/bin:$PATH" exec "$@" ;;
    *)
        say "unknown action '$action' (expected: run, test, setup, -- CMD)"
        exit 2 ;;
esac
