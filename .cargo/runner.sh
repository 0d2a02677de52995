#!/bin/sh
# cargo's runner for this workspace (.cargo/config.toml): runs the binary it is given as it is,
# with more test threads than libtest's one per core for the binaries whose tests mostly wait
# (unless RUST_TEST_THREADS says otherwise):
# - the lab binary (crates/cli/tests/lab/): four. Its modules take turns (common::turn), two
#   tests of one module at a time as when each module was a binary of its own on this 2-core
#   box; the lab tests that read no delay (a lifetime search idling for minutes, an MTU search)
#   take no turn, and with libtest's default of one thread per core they held the threads the
#   turns needed. Four threads leave two to the turns and two to those; the wait is the lab's,
#   not the CPU's.
# - the probe, serve, load and cli binaries: four. Their tests wait on loopback peers,
#   schedules and timeouts (the probe binary used a quarter of two cores over its 72 s): with
#   four threads probe took 38 s, serve 16, load 14 and cli 19 instead of 72, 21, 25 and 25,
#   every test passing. Not the monitor binary (a dashboard of 10,000 targets must draw within
#   a second, and beside three other tests it took 1.35 s), nor the hostile one (its modules
#   take turns while they flood a server: more threads gain nothing), nor the ping one (16 s;
#   with four threads, one of seven runs lost two of three echoes of a plain socat echo).
# Only the npt package's binaries (crates/cli/tests/AREA/): cargo names a test binary after its
# file or folder alone, and another crate's may share a name.
if [ "${CARGO_PKG_NAME:-}" = npt ]; then
    case "${1##*/}" in
        lab-* | probe-* | serve-* | load-* | cli-*)
            : "${RUST_TEST_THREADS:=4}"
            export RUST_TEST_THREADS
            ;;
    esac
fi
exec "$@"
