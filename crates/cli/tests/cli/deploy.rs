//! Why this exists: no cluster is available here, so the Kubernetes manifests in deploy/k8s/
//! are checked the two ways that can be: every resource validates against the Kubernetes
//! schemas with a real validator (PyPI `kubernetes-validate --strict`, installed by ./test.sh),
//! and the agents' command line — with its `$(VAR)`s expanded from the workload ConfigMap, as
//! the kubelet does — really runs as N local agents whose parts belong to one run.

#![cfg(test)]

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use common::*;

fn k8s_dir() -> PathBuf {
    repo_root().join("deploy/k8s")
}

fn have_validator() -> bool {
    if Command::new("kubernetes-validate")
        .arg("--version")
        .output()
        .is_ok()
    {
        return true;
    }
    if std::env::var_os("NPT_SKIP_K8S").is_some() {
        eprintln!("SKIPPED: kubernetes-validate not installed and NPT_SKIP_K8S is set");
        return false;
    }
    panic!(
        "kubernetes-validate is not installed (pip install kubernetes-validate; ./test.sh does)"
    );
}

fn validate(path: &Path) -> (bool, String) {
    let out = Command::new("kubernetes-validate")
        .args(["--strict", "--no-warn"])
        .arg(path)
        .output()
        .expect("kubernetes-validate runs");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// YAML → JSON with python3's yaml module (a dependency of kubernetes-validate).
fn yaml_docs(path: &Path) -> Vec<serde_json::Value> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json,sys,yaml; print(json.dumps(list(yaml.safe_load_all(open(sys.argv[1])))))",
        ])
        .arg(path)
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn manifests() -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(k8s_dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| !p.ends_with("kustomization.yaml"))
        .collect();
    v.sort();
    v
}

#[test]
fn every_manifest_validates_against_the_kubernetes_schemas() {
    if !have_validator() {
        return;
    }
    for m in manifests() {
        let (ok, text) = validate(&m);
        assert!(ok, "{}: {text}", m.display());
    }
    // The validator does catch a broken resource (an unknown field, a wrong type).
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.yaml");
    let text = std::fs::read_to_string(k8s_dir().join("agents.yaml")).unwrap();
    std::fs::write(&bad, text.replace("backoffLimit: 0", "backoffLimit: zero")).unwrap();
    assert!(!validate(&bad).0, "a wrong type must fail");
    std::fs::write(
        &bad,
        text.replace("parallelism: 4", "parallelism: 4\n  parallelismm: 4"),
    )
    .unwrap();
    assert!(!validate(&bad).0, "an unknown field must fail");
}

#[test]
fn the_kustomization_lists_every_manifest() {
    let k = &yaml_docs(&k8s_dir().join("kustomization.yaml"))[0];
    let listed: Vec<&str> = k["resources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect();
    for m in manifests() {
        let name = m.file_name().unwrap().to_str().unwrap();
        assert!(listed.contains(&name), "{name} not in kustomization.yaml");
    }
}

#[test]
fn the_agents_command_line_runs_as_segmented_agents() {
    let job = yaml_docs(&k8s_dir().join("agents.yaml"))
        .into_iter()
        .find(|d| d["kind"] == "Job")
        .expect("a Job");
    let spec = &job["spec"];
    assert_eq!(spec["completionMode"], "Indexed");
    let n = spec["completions"].as_u64().unwrap();
    assert_eq!(spec["parallelism"], n);
    let container = &spec["template"]["spec"]["containers"][0];
    let args: Vec<String> = container["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    assert!(
        args.iter().any(|a| *a == format!("$(INDEX)/{n}")),
        "--segment must use the Job's N: {args:?}"
    );
    let workload = &yaml_docs(&k8s_dir().join("workload.yaml"))[0]["data"];

    // Expand $(VAR) as the kubelet does, pointing the agents at a local npt serve.
    let (_srv, addr) = serve(&[]);
    let start = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_secs(2));
    let dir = tempfile::tempdir().unwrap();
    let mut children = Vec::new();
    for k in 0..n {
        let mut env: Vec<(String, String)> = workload
            .as_object()
            .unwrap()
            .iter()
            .map(|(key, v)| (key.clone(), v.as_str().unwrap().to_string()))
            .collect();
        for (key, v) in env.iter_mut() {
            match key.as_str() {
                "TARGET" => *v = format!("tcp://{addr}"),
                "DURATION" => *v = "1s".into(),
                "USERS" => *v = "8".into(),
                "START_AT" => *v = start.to_string(),
                _ => {}
            }
        }
        env.push(("INDEX".into(), k.to_string()));
        let expanded: Vec<String> = args
            .iter()
            .map(|a| {
                env.iter().fold(a.clone(), |acc, (key, v)| {
                    acc.replace(&format!("$({key})"), v)
                })
            })
            .collect();
        assert!(!expanded.iter().any(|a| a.contains("$(")), "{expanded:?}");
        let out = dir.path().join(format!("part{k}.json"));
        let child = npt()
            .args(&expanded)
            .stdout(Stdio::from(std::fs::File::create(&out).unwrap()))
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        children.push((Guard(child), out));
    }
    let mut users = Vec::new();
    let mut ids = Vec::new();
    for (mut g, out) in children {
        let status = g.0.wait().unwrap();
        assert!(status.success(), "agent failed");
        let d = json(&out);
        assert_valid(&d, "run");
        users.push(d["summary"]["users"].as_u64().unwrap());
        ids.push(d["config"]["segment"]["run_id"].clone());
    }
    assert_eq!(users.iter().sum::<u64>(), 8);
    assert!(
        ids.iter().all(|i| *i == ids[0] && *i == "npt-run-1"),
        "{ids:?}"
    );
}

/// The monitors' DaemonSet runs what its ConfigMap and command line say: with `$(NODE_NAME)`
/// expanded as the kubelet does and the token from its Secret, `npt monitor … --check` takes
/// the config and names the node as the vantage; the store lives on the mounted volume.
#[test]
fn the_monitor_daemonset_runs_its_config_with_the_node_as_vantage() {
    let docs = yaml_docs(&k8s_dir().join("monitor.yaml"));
    let of = |kind: &str| docs.iter().find(|d| d["kind"] == kind).expect(kind);
    let toml = of("ConfigMap")["data"]["monitor.toml"].as_str().unwrap();
    let ds = of("DaemonSet");
    let pod = &ds["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    let mounts = c["volumeMounts"].as_array().unwrap();
    let mount = |name: &str| {
        mounts.iter().find(|m| m["name"] == name).unwrap()["mountPath"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("monitor.toml"), toml).unwrap();
    let args: Vec<String> = c["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            let a = a.as_str().unwrap().replace("$(NODE_NAME)", "node-a");
            // The config and the store where the volumes are mounted, here in the temp dir.
            a.replace(&mount("config"), &dir.path().display().to_string())
                .replace(&mount("store"), &dir.path().display().to_string())
        })
        .collect();
    assert!(!args.iter().any(|a| a.contains("$(")), "{args:?}");
    let out = npt()
        .args(&args)
        .arg("--check")
        .env("NPT_MONITOR_TOKEN", "from-the-secret")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.starts_with("npt monitor node-a:"), "{text}");
    assert!(text.contains("node-a.db"), "{text}");
    // The headless Service selects the DaemonSet's pods (Prometheus resolves it to each).
    let svc = of("Service");
    assert_eq!(svc["spec"]["clusterIP"], "None");
    for (k, v) in svc["spec"]["selector"].as_object().unwrap() {
        assert_eq!(&ds["spec"]["template"]["metadata"]["labels"][k], v, "{k}");
    }
}

/// The Prometheus configs in deploy/prometheus pass `promtool check config` (with their token
/// file pointed at a temporary one: promtool wants it to exist).
#[test]
fn the_prometheus_configs_pass_promtool() {
    assert!(
        Command::new("promtool").arg("--version").output().is_ok(),
        "promtool is not installed (Debian package prometheus; ./test.sh installs it)"
    );
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "t").unwrap();
    let prom = repo_root().join("deploy/prometheus");
    let mut n = 0;
    for e in std::fs::read_dir(&prom).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_none_or(|x| x != "yml") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        let mut fixed = String::new();
        for line in text.lines() {
            match line.split_once("credentials_file:") {
                Some((pre, _)) => fixed += &format!("{pre}credentials_file: {}\n", token.display()),
                None => fixed += &format!("{line}\n"),
            }
        }
        let cfg = dir.path().join(p.file_name().unwrap());
        std::fs::write(&cfg, fixed).unwrap();
        let out = Command::new("promtool")
            .args(["check", "config"])
            .arg(&cfg)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}{}",
            p.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        n += 1;
    }
    assert!(n >= 2, "the Prometheus configs in {}", prom.display());
}
