//! Addresses of one topology: two /30 subnets, sender-router and router-receiver.
//!
//! Each topology lives in its own namespaces, so addresses of two topologies could never
//! collide; they still differ per topology (10.A.B.0/29 with A from the process id and B from
//! the topology counter) so that captures and logs tell topologies apart.

use std::net::Ipv4Addr;

/// Prefix length of both links.
pub const PREFIX_LEN: u8 = 30;

/// The four interface addresses of a sender - router - receiver line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    /// The sender's address (10.A.B.1).
    pub sender: Ipv4Addr,
    /// The router's address on the sender link (10.A.B.2), the sender's gateway.
    pub router_sender_side: Ipv4Addr,
    /// The router's address on the receiver link (10.A.B.5), the receiver's gateway.
    pub router_receiver_side: Ipv4Addr,
    /// The receiver's address (10.A.B.6).
    pub receiver: Ipv4Addr,
}

impl Addresses {
    /// The addresses of topology number `counter` of process `pid`.
    pub fn for_topology(pid: u32, counter: u32) -> Self {
        let a = 16 + (pid % 200) as u8;
        let b = (counter % 256) as u8;
        Addresses {
            sender: Ipv4Addr::new(10, a, b, 1),
            router_sender_side: Ipv4Addr::new(10, a, b, 2),
            router_receiver_side: Ipv4Addr::new(10, a, b, 5),
            receiver: Ipv4Addr::new(10, a, b, 6),
        }
    }
}

/// `addr/PREFIX_LEN`, as `ip addr add` takes it.
pub fn with_prefix(addr: Ipv4Addr) -> String {
    format!("{addr}/{PREFIX_LEN}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_links_are_disjoint_slash_30s() {
        let a = Addresses::for_topology(1234, 7);
        assert_eq!(a.sender, Ipv4Addr::new(10, 16 + 34, 7, 1));
        assert_eq!(a.receiver, Ipv4Addr::new(10, 50, 7, 6));
        // .0-.3 and .4-.7
        assert_eq!(
            u32::from(a.sender) >> 2,
            u32::from(a.router_sender_side) >> 2
        );
        assert_eq!(
            u32::from(a.receiver) >> 2,
            u32::from(a.router_receiver_side) >> 2
        );
        assert_ne!(u32::from(a.sender) >> 2, u32::from(a.receiver) >> 2);
        assert_eq!(with_prefix(a.sender), "10.50.7.1/30");
    }

    #[test]
    fn topologies_of_one_process_differ() {
        assert_ne!(Addresses::for_topology(9, 0), Addresses::for_topology(9, 1));
    }
}
