//! Addressing and routing of lab plans, and the topology checks, without root.

use std::net::Ipv4Addr;

use crate::plan::Plan;
use crate::topology::{Ready, Topology};

fn chain() -> Topology {
    Topology::parse(
        r#"
[[node]]
name = "client"
[[node]]
name = "sea"
[[node]]
name = "la"
[[node]]
name = "target"
[[link]]
a = "client"
b = "sea"
delay = "76ms"
[[link]]
a = "sea"
b = "la"
delay = "16ms"
[link.b_to_a]
delay = "20ms"
loss = "1%"
[[link]]
a = "la"
b = "target"
subnet = "192.168.7.0/24"
[[service]]
node = "target"
cmd = ["npt", "serve"]
ready = "udp://0.0.0.0:7777"
"#,
        "chain",
    )
    .unwrap()
}

#[test]
fn addresses_follow_file_order_or_the_given_subnet() {
    let p = Plan::new(&chain()).unwrap();
    assert_eq!(p.lab, "chain");
    assert_eq!(p.nodes[0].netns, "npt-chain-client");
    let l0 = &p.links[0];
    assert_eq!(
        (l0.a_addr, l0.b_addr),
        (Ipv4Addr::new(10, 0, 1, 1), Ipv4Addr::new(10, 0, 1, 2))
    );
    assert_eq!((l0.a_if.as_str(), l0.b_if.as_str()), ("sea", "client"));
    let l2 = &p.links[2];
    assert_eq!(l2.b_addr, Ipv4Addr::new(192, 168, 7, 2));
}

#[test]
fn per_direction_overrides_only_what_they_name() {
    let t = chain();
    let l = &t.links[1];
    assert_eq!(l.a_to_b.delay, std::time::Duration::from_millis(16));
    assert_eq!(l.b_to_a.delay, std::time::Duration::from_millis(20));
    assert!(matches!(l.a_to_b.loss, npt_link::Loss::None));
    assert!(matches!(l.b_to_a.loss, npt_link::Loss::Random { .. }));
    assert_eq!(t.services[0].ready, Some(Ready::Udp(7777)));
}

#[test]
fn routes_follow_the_chain_both_ways() {
    let p = Plan::new(&chain()).unwrap();
    let client = &p.nodes[0];
    // client reaches 10.0.2.0/24 and 192.168.7.0/24 through sea (10.0.1.2).
    assert_eq!(client.routes.len(), 2);
    assert!(client
        .routes
        .iter()
        .all(|r| r.via == Ipv4Addr::new(10, 0, 1, 2) && r.dev == "sea"));
    let target = &p.nodes[3];
    assert!(target
        .routes
        .iter()
        .all(|r| r.via == Ipv4Addr::new(192, 168, 7, 1)));
    assert!(p.reaches(0, Ipv4Addr::new(192, 168, 7, 2)));
    assert!(p.reaches(3, Ipv4Addr::new(10, 0, 1, 1)));
    assert!(!p.reaches(0, Ipv4Addr::new(10, 9, 9, 9)), "nobody owns it");
    assert!(
        !p.reaches(0, Ipv4Addr::new(10, 0, 1, 3)),
        "in a subnet, but no node's"
    );
}

#[test]
fn disconnected_nodes_get_no_route() {
    let t = Topology::parse(
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[node]]\nname = \"c\"\n[[node]]\nname = \"d\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"c\"\nb = \"d\"\n",
        "islands",
    )
    .unwrap();
    let p = Plan::new(&t).unwrap();
    assert!(p.nodes[0].routes.is_empty());
    assert!(!p.reaches(0, Ipv4Addr::new(10, 0, 2, 2)));
    assert!(p.reaches(0, Ipv4Addr::new(10, 0, 1, 2)));
}

#[test]
fn overlapping_subnets_are_refused() {
    let t = Topology::parse(
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\nsubnet = \"10.0.2.0/23\"\n[[link]]\na = \"a\"\nb = \"b\"\n",
        "x",
    )
    .unwrap();
    let e = Plan::new(&t).unwrap_err();
    assert_eq!(e.key, "link[1].subnet", "{e}");
}

#[test]
fn two_links_between_the_same_nodes_get_distinct_interfaces() {
    let t = Topology::parse(
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n\
         [[link]]\na = \"a\"\nb = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n",
        "x",
    )
    .unwrap();
    let p = Plan::new(&t).unwrap();
    assert_ne!(p.links[0].a_if, p.links[1].a_if);
    assert!(p
        .links
        .iter()
        .all(|l| l.a_if.len() <= 15 && l.b_if.len() <= 15));
}

#[test]
fn errors_name_the_key() {
    let cases = [
        ("[[node]]\nname = \"a\"\n[[node]]\nname = \"a\"\n", "node[1].name"),
        ("[[node]]\nname = \"a b\"\n", "node[0].name"),
        ("name = \"x\"\n", "node"),
        ("[[node]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"zz\"\n", "link[0].b"),
        ("[[node]]\nname = \"a\"\n[[link]]\na = \"a\"\nb = \"a\"\n", "link[0].b"),
        (
            "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nmtu = 9\n",
            "link[0].mtu",
        ),
        (
            "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\n[link.a_to_b]\nspeed = 1\n",
            "link[0].a_to_b.speed",
        ),
        (
            "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nsubnet = \"10.0.0.0/31\"\n",
            "link[0].subnet",
        ),
        ("[[node]]\nname = \"a\"\n[[service]]\nnode = \"a\"\ncmd = []\n", "service[0].cmd"),
        (
            "[[node]]\nname = \"a\"\n[[service]]\nnode = \"a\"\ncmd = [\"x\"]\nready = \"tcp://nowhere\"\n",
            "service[0].ready",
        ),
        ("[[node]]\nname = \"a\"\nbogus = 1\n", "node[0].bogus"),
        ("colour = 1\n", "colour"),
    ];
    for (text, key) in cases {
        let e = Topology::parse(text, "t").unwrap_err();
        assert_eq!(e.key, key, "{text}: {e}");
    }
    // Impairment errors name the direction and the field.
    let e = Topology::parse(
        "[[node]]\nname = \"a\"\n[[node]]\nname = \"b\"\n[[link]]\na = \"a\"\nb = \"b\"\nloss = \"150%\"\n",
        "t",
    )
    .unwrap_err();
    assert!(e.to_string().contains("loss"), "{e}");
}
