//! The vantages of a merged monitor range (`npt report --from a.db --from b.db`): each store's
//! own figures under the merged document's text, so "what users saw from anywhere" (the
//! document above) keeps "from where" beside it. Read from `config.monitor.vantages` as the
//! monitor wrote it (this crate sits below the monitor and knows its figures only as JSON).

use std::io::{self, Write};

use serde_json::Value;

/// One row: a store (or the merge), its vantage, rounds and headline figures.
fn row(w: &mut dyn Write, store: &str, vantage: &str, rounds: &Value, f: &Value) -> io::Result<()> {
    let ms = |k: &str| f[k].as_f64().map_or("-".to_string(), |v| format!("{v:.2}"));
    let sent = f["sent"].as_u64().unwrap_or(0);
    let took = sent.saturating_sub(f["refused"].as_u64().unwrap_or(0));
    let loss = if took > 0 {
        format!(
            "{:.2} %",
            100.0 * f["lost"].as_u64().unwrap_or(0) as f64 / took as f64
        )
    } else {
        "-".to_string()
    };
    let count = f["count"].as_u64().unwrap_or(0);
    let (p50, p99, max) = if count > 0 {
        (ms("p50_ms"), ms("p99_ms"), ms("max_ms"))
    } else {
        ("-".into(), "-".into(), "-".into())
    };
    writeln!(
        w,
        "  {store:<28} {vantage:<14} {:>7} {:>9} {p50:>9} {p99:>9} {max:>9} {loss:>8}",
        rounds.as_u64().unwrap_or(0),
        count,
    )
}

/// The vantage table of `config` when it has one (a merge of several stores); nothing else.
pub fn write(w: &mut dyn Write, config: &Value) -> io::Result<()> {
    let m = &config["monitor"];
    let Some(vs) = m["vantages"].as_array() else {
        return Ok(());
    };
    writeln!(
        w,
        "vantages   each store's own rounds; the figures above are all of them added"
    )?;
    writeln!(
        w,
        "  {:<28} {:<14} {:>7} {:>9} {:>9} {:>9} {:>9} {:>8}",
        "store", "vantage", "rounds", "samples", "p50 ms", "p99 ms", "max ms", "loss"
    )?;
    for v in vs {
        row(
            w,
            v["store"].as_str().unwrap_or("?"),
            v["vantage"].as_str().unwrap_or("-"),
            &v["rounds"],
            &v["figures"],
        )?;
    }
    row(w, "merged", "", &m["rounds"], &m["figures"])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_merge_lists_each_store_and_the_merged_figures() {
        let f = |p50: f64, lost: u64| {
            serde_json::json!({"count": 98, "sent": 100, "lost": lost, "errors": 0,
                "min_ms": 1.0, "p1_ms": 1.0, "p10_ms": 1.0, "p50_ms": p50, "p90_ms": p50,
                "p99_ms": p50, "max_ms": p50, "mean_ms": p50, "bytes": 0})
        };
        let config = serde_json::json!({"monitor": {"rounds": 20, "figures": f(30.0, 3),
        "vantages": [
            {"store": "hk.db", "vantage": "hk", "rounds": 10, "figures": f(50.0, 2)},
            {"store": "fra.db", "vantage": null, "rounds": 10, "figures": null},
        ]}});
        let mut out = Vec::new();
        write(&mut out, &config).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 5, "{text}");
        assert!(
            lines[2].contains("hk.db") && lines[2].contains("50.00"),
            "{text}"
        );
        assert!(lines[2].contains("2.00 %"), "{text}");
        // A store whose rows had no stats shows dashes, not zeros.
        assert!(
            lines[3].contains("fra.db") && lines[3].contains(" - "),
            "{text}"
        );
        assert!(
            lines[4].starts_with("  merged") && lines[4].contains("3.00 %"),
            "{text}"
        );
        // A one-store range (no vantages) adds nothing.
        let mut out = Vec::new();
        write(&mut out, &serde_json::json!({"monitor": {"rounds": 1}})).unwrap();
        assert!(out.is_empty());
    }
}
