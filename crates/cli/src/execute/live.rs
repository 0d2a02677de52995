//! The live view of a long run on a terminal (ratatui, as oha and NPT have): elapsed and
//! remaining time, the current rate, p50 / p99 of the last interval, loss and errors, and a
//! latency sparkline. `q`, Esc or Ctrl-C stops the run the way SIGINT does (a second one
//! abandons what is in flight), and the full report is still written after the view closes.
//!
//! The measurement never waits for the screen: each interval a workload hands over becomes a
//! [`Sample`] sent down a channel, and a thread of its own draws at most 4 times a second. Not a terminal (CI, a pipe) or `--quiet`:
//! no view, the plain interval lines as before. The terminal is restored when the view ends,
//! on error and on panic (a guard's `Drop`).

use std::io::{self, IsTerminal, Stdout};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use npt_result::workload::Progress;
use ratatui::crossterm::event::{self, Event, KeyCode, KeyEventKind, KeyModifiers};
use ratatui::crossterm::terminal::{
    disable_raw_mode, enable_raw_mode, EnterAlternateScreen, LeaveAlternateScreen,
};
use ratatui::crossterm::ExecutableCommand;
use ratatui::layout::{Constraint, Layout};
use ratatui::prelude::CrosstermBackend;
use ratatui::style::{Color, Style};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Gauge, Paragraph, Sparkline};
use ratatui::Terminal;

/// One finished interval of a workload, in the units the view shows.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// End of the interval, seconds since the start.
    pub t_s: f64,
    /// Packets or requests per second.
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// Errors in this interval.
    pub errors: u64,
    /// Loss in this interval, for packet workloads.
    pub loss_pct: Option<f64>,
    /// Where this interval's losses were placed (up, down) and what the server refused, for
    /// a probe whose server says what it saw.
    pub split: Option<String>,
}

impl Sample {
    /// What the view shows of one interval a workload handed over.
    pub fn of(p: &Progress<'_>) -> Sample {
        let iv = p.interval;
        Sample {
            t_s: p.elapsed.as_secs_f64(),
            rate: iv.rate_per_s,
            p50_ms: iv.latency_ms.p50,
            p99_ms: iv.latency_ms.p99,
            errors: iv.errors,
            loss_pct: iv.loss_pct,
            split: split(iv),
        }
    }
}

/// `lost up 3 down 1 (2 not placed yet)   refused by the server 700`, or None when the
/// interval says nothing per direction.
fn split(iv: &npt_result::interval::Interval) -> Option<String> {
    let mut parts = Vec::new();
    if let (Some(u), Some(d)) = (iv.lost_up, iv.lost_down) {
        let rest = iv.lost.unwrap_or(0).saturating_sub(u + d);
        let unplaced = if rest > 0 {
            format!(" ({rest} not placed yet)")
        } else {
            String::new()
        };
        parts.push(format!("lost up {u} down {d}{unplaced}"));
    }
    if let Some(r) = iv.refused.filter(|r| *r > 0) {
        parts.push(format!("refused by the server {r} (not path loss)"));
    }
    (!parts.is_empty()).then(|| parts.join("   "))
}

/// What the view shows around the samples.
pub struct Spec {
    /// e.g. `npt probe udp://127.0.0.1:7777 — rate 20000 pps (open loop)`.
    pub title: String,
    /// `pps` or `req/s`.
    pub rate_unit: &'static str,
    /// The run's planned length, for the progress bar and the time remaining.
    pub duration: Option<Duration>,
}

/// Whether a live view can be shown: both ends of the terminal are a terminal.
pub fn wanted(quiet: bool) -> bool {
    !quiet && io::stdout().is_terminal() && io::stdin().is_terminal()
}

pub struct Live {
    tx: Option<Sender<Sample>>,
    handle: Option<JoinHandle<io::Result<()>>>,
}

impl Live {
    /// Takes over the terminal and starts drawing. `stop` is called for each `q` / Ctrl-C.
    pub fn start(spec: Spec, stop: impl Fn() + Send + 'static) -> io::Result<Live> {
        let (tx, rx) = mpsc::channel();
        let guard = TerminalGuard::enter()?;
        let handle = std::thread::Builder::new()
            .name("npt-live".into())
            .spawn(move || draw_loop(guard, spec, rx, stop))?;
        Ok(Live {
            tx: Some(tx),
            handle: Some(handle),
        })
    }

    pub fn sample(&self, s: Sample) {
        if let Some(tx) = &self.tx {
            let _ = tx.send(s);
        }
    }

    /// Closes the view and gives the terminal back (then the report can be printed).
    pub fn finish(mut self) -> io::Result<()> {
        self.close()
    }

    fn close(&mut self) -> io::Result<()> {
        drop(self.tx.take());
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(r)) => r,
            Some(Err(_)) => Err(io::Error::other("the live view thread panicked")),
            None => Ok(()),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        let _ = self.close();
    }
}

/// Raw mode and the alternate screen, undone on drop (also while unwinding from a panic).
struct TerminalGuard {
    term: Terminal<CrosstermBackend<Stdout>>,
}

impl TerminalGuard {
    fn enter() -> io::Result<TerminalGuard> {
        enable_raw_mode()?;
        let mut out = io::stdout();
        if let Err(e) = out.execute(EnterAlternateScreen) {
            let _ = disable_raw_mode();
            return Err(e);
        }
        let term = Terminal::new(CrosstermBackend::new(out))?;
        Ok(TerminalGuard { term })
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        let _ = disable_raw_mode();
        let _ = self.term.backend_mut().execute(LeaveAlternateScreen);
        let _ = self.term.show_cursor();
    }
}

const FRAME: Duration = Duration::from_millis(250);
/// Intervals kept for the sparkline (a bounded ring, not the run's history).
const SPARK: usize = 120;

fn draw_loop(
    mut guard: TerminalGuard,
    spec: Spec,
    rx: Receiver<Sample>,
    stop: impl Fn(),
) -> io::Result<()> {
    let started = Instant::now();
    let mut last: Option<Sample> = None;
    let mut spark: std::collections::VecDeque<u64> = std::collections::VecDeque::new();
    let mut errors = 0u64;
    let mut stops = 0u32;
    loop {
        // Samples first (all that arrived), then keys, then one frame.
        let mut open = true;
        loop {
            match rx.recv_timeout(Duration::ZERO) {
                Ok(s) => {
                    errors += s.errors;
                    // NO-PANIC: a float-to-int `as` saturates (NaN gives 0): a sparkline bar.
                    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
                    let p50_us = (s.p50_ms * 1000.0).round() as u64;
                    spark.push_back(p50_us);
                    if spark.len() > SPARK {
                        spark.pop_front();
                    }
                    last = Some(s);
                }
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        if !open {
            return Ok(());
        }
        if event::poll(FRAME)? {
            if let Event::Key(k) = event::read()? {
                let ctrl_c = k.code == KeyCode::Char('c') && k.modifiers == KeyModifiers::CONTROL;
                let quit = matches!(k.code, KeyCode::Char('q') | KeyCode::Esc) || ctrl_c;
                if k.kind == KeyEventKind::Press && quit {
                    stops += 1;
                    stop();
                }
            }
        }
        let elapsed = started.elapsed();
        guard.term.draw(|f| {
            let area = f.area();
            let rows = Layout::vertical([
                Constraint::Length(3),
                Constraint::Length(5),
                Constraint::Min(3),
                Constraint::Length(1),
            ])
            .split(area);
            let (ratio, label) = match spec.duration {
                Some(d) if !d.is_zero() => {
                    let r = (elapsed.as_secs_f64() / d.as_secs_f64()).clamp(0.0, 1.0);
                    let left = d.saturating_sub(elapsed);
                    (
                        r,
                        format!(
                            "elapsed {:.1} s, remaining {:.1} s",
                            elapsed.as_secs_f64(),
                            left.as_secs_f64()
                        ),
                    )
                }
                _ => (0.0, format!("elapsed {:.1} s", elapsed.as_secs_f64())),
            };
            f.render_widget(
                Gauge::default()
                    .block(Block::default().borders(Borders::ALL).title(spec.title.as_str()))
                    .gauge_style(Style::default().fg(Color::Cyan))
                    .ratio(ratio)
                    .label(label),
                rows[0],
            );
            let now = match &last {
                Some(s) => vec![
                    Line::from(format!(
                        "rate {:.0} {}   p50 {:.3} ms   p99 {:.3} ms   (interval ending at {:.1} s)",
                        s.rate, spec.rate_unit, s.p50_ms, s.p99_ms, s.t_s
                    )),
                    Line::from(format!(
                        "errors {errors} so far{}",
                        s.loss_pct
                            .map(|l| format!("   loss {l:.2}% in the last interval"))
                            .unwrap_or_default()
                    )),
                    Line::from(s.split.clone().unwrap_or_default()),
                ],
                None => vec![Line::from("waiting for the first interval…")],
            };
            f.render_widget(
                Paragraph::new(now).block(Block::default().borders(Borders::ALL).title("now")),
                rows[1],
            );
            let data: Vec<u64> = spark.iter().copied().collect();
            f.render_widget(
                Sparkline::default()
                    .block(
                        Block::default()
                            .borders(Borders::ALL)
                            .title("p50 latency per interval (µs)"),
                    )
                    .style(Style::default().fg(Color::Green))
                    .data(&data),
                rows[2],
            );
            let help = if stops == 0 {
                "q / Ctrl-C: stop (the report is still written)"
            } else {
                "stopping: waiting for replies in flight (q / Ctrl-C again: give them up)"
            };
            f.render_widget(Paragraph::new(help), rows[3]);
        })?;
    }
}
