//! Nothing a topology creates outlives it: not on drop, not on `close`, not on a panic, and
//! what a killed process left is removed by `cleanup_stale`. Gated like tests/topology.rs.

mod common;

use std::ffi::CString;
use std::os::fd::AsRawFd;

use common::{network_ready, path, serial};
use mocc_net::namespace::{list_namespaces, namespace_path};
use mocc_net::return_path::TUN_IF;
use mocc_net::{Host, Topology};

/// Whether interface `name` exists in the network namespace behind `netns` (a thread enters
/// it and asks the kernel).
fn interface_exists_in(netns: &std::fs::File, name: &str) -> bool {
    let name = CString::new(name).expect("interface name");
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                // SAFETY: a valid namespace fd; setns only changes this thread.
                let rc = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(rc, 0, "setns: {}", std::io::Error::last_os_error());
                // SAFETY: a valid NUL-terminated name.
                unsafe { libc::if_nametoindex(name.as_ptr()) != 0 }
            })
            .join()
            .expect("namespace probe thread")
    })
}

#[test]
fn dropping_topologies_leaves_no_namespace_and_no_tun_device() {
    if !network_ready(&[]) {
        return;
    }
    let _serial = serial();
    let first = Topology::create(&path(10.0, 0.005, 50)).expect("first topology");
    let second = Topology::create(&path(20.0, 0.005, 50)).expect("second topology, alongside");
    let names: Vec<String> = [&first, &second]
        .iter()
        .flat_map(|t| t.namespaces().map(str::to_string))
        .collect();
    assert_ne!(first.receiver_addr(), second.receiver_addr());
    let router = first.namespace(Host::Router).to_string();
    // Keeps the router's namespace itself alive past the drop, to look inside it.
    let router_netns = std::fs::File::open(namespace_path(&router)).expect("router netns");
    assert!(
        interface_exists_in(&router_netns, TUN_IF),
        "no {TUN_IF} in {router}"
    );
    let listed = list_namespaces().expect("ip netns list");
    assert!(
        names.iter().all(|n| listed.contains(n)),
        "{names:?} not all in {listed:?}"
    );

    drop(first);
    second.close().expect("closing the second topology");

    let listed = list_namespaces().expect("ip netns list");
    let left: Vec<&String> = names.iter().filter(|n| listed.contains(n)).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    let ip_list = mocc_net::command::run("ip", &["netns", "list"]).expect("ip netns list");
    assert!(
        names.iter().all(|n| !ip_list.contains(n.as_str())),
        "{ip_list}"
    );
    assert!(
        !interface_exists_in(&router_netns, TUN_IF),
        "{TUN_IF} outlived its topology"
    );
    let host_netns = std::fs::File::open("/proc/self/ns/net").expect("own netns");
    assert!(
        !interface_exists_in(&host_netns, TUN_IF),
        "{TUN_IF} in the host namespace"
    );
}

#[test]
fn a_panic_with_a_live_topology_removes_it() {
    if !network_ready(&[]) {
        return;
    }
    let _serial = serial();
    let mut names = Vec::new();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let topology = Topology::create(&path(10.0, 0.005, 50)).expect("topology");
        names.extend(topology.namespaces().map(str::to_string));
        panic!("deliberate panic while the topology is alive");
    }));
    assert!(outcome.is_err());
    assert_eq!(names.len(), 3);
    let listed = list_namespaces().expect("ip netns list");
    assert!(
        names.iter().all(|n| !listed.contains(n)),
        "left behind after a panic: {listed:?}"
    );
}

#[test]
fn cleanup_stale_removes_what_a_dead_process_left() {
    if !network_ready(&[]) {
        return;
    }
    let _serial = serial();
    let mut child = std::process::Command::new("true")
        .spawn()
        .expect("spawning true");
    let dead_pid = child.id();
    child.wait().expect("waiting for true");
    assert!(
        !mocc_net::cleanup::process_alive(dead_pid),
        "pid {dead_pid} reused already"
    );
    let stale = mocc_net::cleanup::namespace_name(dead_pid, 0, "rtr");
    let mine = mocc_net::cleanup::namespace_name(std::process::id(), 999_999, "rtr");
    for name in [&stale, &mine] {
        mocc_net::command::run("ip", &["netns", "add", name.as_str()]).expect("ip netns add");
    }
    let removed = mocc_net::cleanup_stale();
    let listed = list_namespaces().expect("ip netns list");
    let _ = mocc_net::namespace::delete_namespace(&mine);
    let removed = removed.expect("cleanup_stale");
    assert!(removed.contains(&stale), "{stale} not removed: {removed:?}");
    assert!(!listed.contains(&stale), "{stale} still listed");
    assert!(
        listed.contains(&mine),
        "a live process's namespace was removed"
    );
}
