//! Tests of addressing and routing.
