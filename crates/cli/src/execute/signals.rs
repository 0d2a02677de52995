//! Ctrl-C and SIGTERM: the first asks the run to stop sending and wait for replies in flight,
//! the second abandons them. Either way the report of what was measured is still written.

use std::sync::Arc;

use npt_result::workload::Stop;

/// Counts SIGINT/SIGTERM into `stop`.
pub fn install(stop: &Arc<Stop>) -> anyhow::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let s = stop.clone();
        // SAFETY: the handler only does an atomic add (`Stop::signal`), which is
        // async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || s.signal())?;
        }
    }
    Ok(())
}
