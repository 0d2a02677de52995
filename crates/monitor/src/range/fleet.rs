//! One target seen from several vantages (or one vantage across several stores) as one result
//! document: `npt report --from hk.db --from fra.db --target NAME`. Each store's rows are read
//! as for one store ([`super::report`]); then every row of every store is added into one stats
//! value, exactly as a range adds its rounds and rollups — counts add, histograms add, so the
//! merged p50 is the p50 of every sample any vantage took — and each vantage's own figures
//! (its rows added alone) stand beside it in `config.monitor.vantages`.
//!
//! The stores must hold the target as the same kind, and its rounds must add (a probe's stages
//! and sizes alike); else the merge is refused, naming the stores. Two vantages measure two
//! paths: the merge is the user's question ("what did users see, from anywhere"), and the
//! per-vantage figures keep the answer to "from where".

use serde_json::json;

use super::{document, read, rfc3339, span, total, Part, RangeError, Read};
use crate::store::Store;

/// One store to read, and how the document names it (its file, as the user gave it).
pub struct Source<'a> {
    pub label: String,
    pub store: &'a dyn Store,
}

/// `target`'s history in `[from, to)` across every store in `sources`, merged.
pub fn report_many(
    sources: &[Source<'_>],
    target: &str,
    from: i64,
    to: i64,
) -> Result<npt_result::any::AnyResult, RangeError> {
    let Some((first_source, rest)) = sources.split_first() else {
        return Err(RangeError::Other("no store to read".into()));
    };
    if rest.is_empty() {
        return super::report(first_source.store, target, from, to);
    }
    let named = |s: &Source<'_>, e: RangeError| RangeError::Other(format!("{}: {e}", s.label));
    let mut reads: Vec<(&Source<'_>, Read)> = Vec::new();
    for s in sources {
        let r = read(s.store, target, from, to).map_err(|e| named(s, e))?;
        if let Some((other, o)) = reads.iter().find(|(_, o)| o.kind != r.kind) {
            return Err(RangeError::Other(format!(
                "{target:?} is a {} target in {} but a {} target in {}: only the same kind merges",
                o.kind.name(),
                other.label,
                r.kind.name(),
                s.label
            )));
        }
        reads.push((s, r));
    }
    let mut vantages = Vec::new();
    for (s, r) in &reads {
        let own = total(&r.parts, |e| named(s, RangeError::Other(e.to_string())))?;
        vantages.push(json!({
            "store": s.label,
            "vantage": r.vantage,
            "from": rfc3339(r.start),
            "to": rfc3339(to),
            "rows": r.parts.len(),
            "rounds": r.parts.iter().map(|p| p.rounds).sum::<u64>(),
            "by_status": r.by_status,
            "figures": own.as_ref().map(crate::kinds::KindStats::figures),
        }));
    }
    // Described by the store whose rows end last (the newest settings).
    let newest = reads
        .iter()
        .enumerate()
        .max_by_key(|(_, (_, r))| r.parts.last().map_or(i64::MIN, |p| p.to))
        .map_or(0, |(i, _)| i);
    // Every row of every store, in time order, added into one value.
    let mut parts: Vec<Part> = Vec::new();
    for (_, r) in &mut reads {
        parts.append(&mut r.parts);
    }
    parts.sort_by_key(|p| p.from);
    let total = total(&parts, |e| {
        RangeError::Other(format!(
            "the stores' rounds of {target:?} do not add up ({e}): were they run with the same settings?"
        ))
    })?
    .ok_or_else(|| super::empty(target, from, to))?;
    let (_, newest) = &reads[newest];
    let start = reads.iter().map(|(_, r)| r.start).min().unwrap_or(from);
    let merged = total.figures();
    let mut monitor = span(target, newest.kind, from, start, to, &parts);
    monitor.insert("vantage".into(), serde_json::Value::Null);
    monitor.insert("figures".into(), json!(merged));
    monitor.insert("vantages".into(), json!(vantages));
    let monitor = serde_json::Value::Object(monitor);
    document(newest, &parts, &total, monitor, to)
}
