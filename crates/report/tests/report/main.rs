//! The renderers' and merge's integration tests, one binary (each test binary links the whole
//! tree): the HTML report drawn by headless Chromium, `npt merge` of random splits against the
//! whole, and results written by an older npt read back. A module was once a binary of its own;
//! each test takes its module's turn (`npt_testkit::turn`), so that modules still run one after
//! another (Chromium's page loads never beside the merge's CPU-bound loops).
#![cfg(test)] // clippy.toml: test helpers count as tests

mod html_chromium;
mod merge_split;
mod v1_files;
