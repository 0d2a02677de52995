//! Ctrl-C and SIGTERM: the first asks the run to stop sending and wait for replies in flight,
//! the second abandons them. Either way the report of what was measured is still written.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use npt_probe::probe::driver::Control;

/// Counts SIGINT/SIGTERM into `control.signals`.
pub fn install(control: &Arc<Control>) -> anyhow::Result<()> {
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let c = control.clone();
        // SAFETY: the handler only does an atomic add, which is async-signal-safe.
        unsafe {
            signal_hook::low_level::register(sig, move || {
                c.signals.fetch_add(1, Ordering::SeqCst);
            })?;
        }
    }
    Ok(())
}
