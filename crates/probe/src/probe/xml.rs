//! The line tester's XML config (`ConfigTemplate.xml`), read as its manual prints it.
//!
//! ```xml
//! <settings>
//!   <general protocol="udp" clientcount="1" threadsperclient="8" buffersize="2048" />
//!   <target ip="127.0.0.1" port="7777" />
//!   <control mode="count" param="1000000" />          <!-- count | time (ms) | manual -->
//!   <relay mode="onrecv" interval="10" maxpps="1000" ppsdelay="5"
//!          warmupcount="50000" warmupinterval="10" />  <!-- interval | onsend | onrecv -->
//!   <debug sendpoolsize="1000000" />
//!   <dataprotocol mode="raw" ... />                    <!-- raw (fakes5 is not supported) -->
//!   <log mode="count" param="100000" />                <!-- count | time (ms) -->
//! </settings>
//! ```
//! The line tester's `dataprotocol raw` means a plain echo server, so a config maps to npt's raw
//! framing. `threadsperclient`, `buffersize`, `ppsdelay` and `sendpoolsize` tuned the line tester's own
//! sender and have no equivalent (npt has one sender loop per client socket); they are read,
//! checked and reported as ignored. Every error names the element and attribute.
#![deny(clippy::indexing_slicing)] // parses a user-written XML config: see `[workspace.lints]`

use std::time::Duration;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum XmlError {
    #[error("config is not valid XML: {0}")]
    Syntax(String),
    #[error("config: root element must be <settings>, found <{0}>")]
    Root(String),
    #[error("config: missing element <{0}>")]
    MissingElement(&'static str),
    #[error("config: <{element}> is missing attribute {attr:?}")]
    MissingAttr {
        element: &'static str,
        attr: &'static str,
    },
    #[error("config: <{element} {attr}={value:?}>: {why}")]
    BadValue {
        element: &'static str,
        attr: &'static str,
        value: String,
        why: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum XmlStop {
    Count(u64),
    Time(Duration),
    Manual,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum XmlPacing {
    Interval(Duration),
    OnSend { maxpps: f64 },
    OnRecv { warmup: u64, interval: Duration },
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum XmlLog {
    Count(u64),
    Time(Duration),
}

#[derive(Clone, Debug, PartialEq)]
pub struct XmlConfig {
    pub tcp: bool,
    pub clients: u32,
    pub threads_per_client: u32,
    pub host: String,
    pub port: u16,
    pub stop: XmlStop,
    pub pacing: XmlPacing,
    pub log: Option<XmlLog>,
    /// Attributes read but without effect in npt, for a notice.
    pub ignored: Vec<String>,
}

struct El<'a, 'i> {
    name: &'static str,
    node: roxmltree::Node<'a, 'i>,
}

impl El<'_, '_> {
    fn attr(&self, attr: &'static str) -> Result<&str, XmlError> {
        self.node.attribute(attr).ok_or(XmlError::MissingAttr {
            element: self.name,
            attr,
        })
    }

    fn opt(&self, attr: &'static str) -> Option<&str> {
        self.node.attribute(attr)
    }

    fn num<T>(&self, attr: &'static str, min: T) -> Result<T, XmlError>
    where
        T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
    {
        let v = self.attr(attr)?;
        let bad = |why: String| XmlError::BadValue {
            element: self.name,
            attr,
            value: v.to_string(),
            why,
        };
        let n: T = v.trim().parse().map_err(|_| bad("not a number".into()))?;
        if n < min {
            return Err(bad(format!("must be at least {min}")));
        }
        Ok(n)
    }

    fn bad(&self, attr: &'static str, why: &str) -> XmlError {
        XmlError::BadValue {
            element: self.name,
            attr,
            value: self.opt(attr).unwrap_or("").to_string(),
            why: why.to_string(),
        }
    }
}

fn element<'a, 'i>(root: roxmltree::Node<'a, 'i>, name: &'static str) -> Option<El<'a, 'i>> {
    root.children()
        .find(|n| n.is_element() && n.tag_name().name() == name)
        .map(|node| El { name, node })
}

fn required<'a, 'i>(
    root: roxmltree::Node<'a, 'i>,
    name: &'static str,
) -> Result<El<'a, 'i>, XmlError> {
    element(root, name).ok_or(XmlError::MissingElement(name))
}

fn ms(v: u64) -> Duration {
    Duration::from_millis(v)
}

pub fn parse(text: &str) -> Result<XmlConfig, XmlError> {
    let doc = roxmltree::Document::parse(text).map_err(|e| XmlError::Syntax(e.to_string()))?;
    let root = doc.root_element();
    if root.tag_name().name() != "settings" {
        return Err(XmlError::Root(root.tag_name().name().to_string()));
    }
    let mut ignored = Vec::new();

    let general = required(root, "general")?;
    let tcp = match general.attr("protocol")?.to_ascii_lowercase().as_str() {
        "udp" => false,
        "tcp" => true,
        _ => return Err(general.bad("protocol", "expected udp or tcp")),
    };
    let clients: u32 = general.num("clientcount", 1)?;
    let threads_per_client: u32 = match general.opt("threadsperclient") {
        Some(_) => general.num("threadsperclient", 1)?,
        None => 1,
    };
    if general.opt("threadsperclient").is_some() {
        ignored.push(format!("general threadsperclient={threads_per_client}"));
    }
    if let Some(b) = general.opt("buffersize") {
        let _: u32 = general.num("buffersize", 1)?;
        ignored.push(format!("general buffersize={b}"));
    }

    let target = required(root, "target")?;
    let host = target.attr("ip")?.trim().to_string();
    if host.is_empty() {
        return Err(target.bad("ip", "empty"));
    }
    let port: u16 = target.num("port", 1)?;

    let control = required(root, "control")?;
    let stop = match control.attr("mode")? {
        "count" => XmlStop::Count(control.num("param", 1)?),
        "time" => XmlStop::Time(ms(control.num("param", 1)?)),
        "manual" => XmlStop::Manual,
        _ => return Err(control.bad("mode", "expected count, time or manual")),
    };

    let relay = required(root, "relay")?;
    let pacing = match relay.attr("mode")? {
        "interval" => XmlPacing::Interval(ms(relay.num("interval", 0)?)),
        "onsend" => {
            if let Some(d) = relay.opt("ppsdelay") {
                ignored.push(format!("relay ppsdelay={d}"));
            }
            let maxpps: f64 = relay.num("maxpps", 0.001)?;
            // "NaN" and "inf" read as f64 and NaN passes the minimum (found by fuzz/xml).
            if !maxpps.is_finite() {
                return Err(relay.bad("maxpps", "must be a finite number"));
            }
            XmlPacing::OnSend { maxpps }
        }
        "onrecv" => XmlPacing::OnRecv {
            warmup: relay.num("warmupcount", 1)?,
            interval: ms(relay.num("warmupinterval", 0)?),
        },
        _ => return Err(relay.bad("mode", "expected interval, onsend or onrecv")),
    };

    if let Some(debug) = element(root, "debug") {
        if let Some(v) = debug.opt("sendpoolsize") {
            let _: u64 = debug.num("sendpoolsize", 0)?;
            ignored.push(format!("debug sendpoolsize={v}"));
        }
    }
    if let Some(dp) = element(root, "dataprotocol") {
        match dp.attr("mode")? {
            "raw" => {}
            "fakes5" => {
                return Err(dp.bad(
                    "mode",
                    "fakes5 (the accelerator's pseudo-SOCKS5 header) is not supported; use raw",
                ))
            }
            _ => return Err(dp.bad("mode", "expected raw")),
        }
    }
    let log = match element(root, "log") {
        None => None,
        Some(l) => Some(match l.attr("mode")? {
            "count" => XmlLog::Count(l.num("param", 1)?),
            "time" => XmlLog::Time(ms(l.num("param", 1)?)),
            _ => return Err(l.bad("mode", "expected count or time")),
        }),
    };
    Ok(XmlConfig {
        tcp,
        clients,
        threads_per_client,
        host,
        port,
        stop,
        pacing,
        log,
        ignored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The line tester's ConfigTemplate.xml, verbatim (comments included).
    const TEMPLATE: &str = include_str!("../../../../examples/ConfigTemplate.xml");

    #[test]
    fn seed_template_parses() {
        let c = parse(TEMPLATE).unwrap();
        assert!(!c.tcp);
        assert_eq!((c.clients, c.threads_per_client), (1, 8));
        assert_eq!((c.host.as_str(), c.port), ("127.0.0.1", 7777));
        assert_eq!(c.stop, XmlStop::Count(1_000_000));
        assert_eq!(
            c.pacing,
            XmlPacing::OnRecv {
                warmup: 50_000,
                interval: Duration::from_millis(10)
            }
        );
        assert_eq!(c.log, Some(XmlLog::Count(100_000)));
        assert_eq!(c.ignored.len(), 3);
    }

    #[test]
    fn seed_onsend_example_parses() {
        let x = r#"<?xml version="1.0" encoding="utf-8"?>
<settings>
    <general protocol="udp" clientcount="1" threadsperclient="6" buffersize="2048" />
    <target ip="127.0.0.1" port="7777" />
    <control mode="count" param="5000000" />
    <relay mode="onsend" interval="10" maxpps="20000" ppsdelay="5" warmupcount="5000" warmupinterval="1" />
    <debug sendpoolsize="1000000" />
    <dataprotocol mode="raw" />
    <log mode="time" param="3500" />
</settings>"#;
        let c = parse(x).unwrap();
        assert_eq!(c.pacing, XmlPacing::OnSend { maxpps: 20000.0 });
        assert_eq!(c.log, Some(XmlLog::Time(Duration::from_millis(3500))));
    }

    #[test]
    fn errors_name_the_element_and_attribute() {
        let cut = |from: &str, to: &str| TEMPLATE.replace(from, to);
        let e = parse(&cut(r#"port="7777""#, r#"port="seven""#)).unwrap_err();
        assert_eq!(
            e.to_string(),
            r#"config: <target port="seven">: not a number"#
        );
        let e = parse(&cut(r#"<target ip="127.0.0.1" port="7777" />"#, "")).unwrap_err();
        assert_eq!(e, XmlError::MissingElement("target"));
        let e = parse(&cut(r#"mode="onrecv""#, r#"mode="sideways""#)).unwrap_err();
        assert!(e.to_string().contains("<relay mode=\"sideways\">"), "{e}");
        let e = parse(&cut(r#"clientcount="1""#, r#"clientcount="0""#)).unwrap_err();
        assert!(e.to_string().contains("at least 1"), "{e}");
        let e = parse(&cut(
            r#"<dataprotocol mode="raw""#,
            r#"<dataprotocol mode="fakes5""#,
        ))
        .unwrap_err();
        assert!(e.to_string().contains("fakes5"), "{e}");
        assert!(matches!(
            parse("<settings><general"),
            Err(XmlError::Syntax(_))
        ));
        assert!(matches!(parse("<other/>"), Err(XmlError::Root(_))));
    }

    /// fuzz/xml: `maxpps="NaN"` passed the minimum check (NaN compares false) and `"inf"`
    /// read as a rate; both reached `npt probe`, which refused them naming `--pps`, not the
    /// file. Now the file's attribute is named.
    #[test]
    fn fuzz_crash_maxpps_nan_and_inf_are_refused() {
        for v in ["NaN", "inf", "-inf", "infinity"] {
            let x = TEMPLATE
                .replace(r#"mode="onrecv""#, r#"mode="onsend""#)
                .replace(r#"maxpps="1000""#, &format!("maxpps=\"{v}\""));
            let e = parse(&x).unwrap_err();
            assert!(
                e.to_string().starts_with("config: <relay maxpps="),
                "{v}: {e}"
            );
        }
    }
}
