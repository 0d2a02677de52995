#!/bin/sh
# cargo's runner for this workspace (.cargo/config.toml): runs the binary it is given as it is.
# The one exception: the lab test binary (crates/cli/tests/lab/) gets four test threads unless
# RUST_TEST_THREADS says otherwise. Its modules take turns (common::turn), two tests of one
# module at a time as when each module was a binary of its own on this 2-core box; the lab
# tests that read no delay (a lifetime search idling for minutes, an MTU search) take no turn,
# and with libtest's default of one thread per core they held the threads the turns needed.
# Four threads leave two to the turns and two to those; the wait is the lab's, not the CPU's.
case "${1##*/}" in
    lab-*) : "${RUST_TEST_THREADS:=4}"; export RUST_TEST_THREADS ;;
esac
exec "$@"
