//! Random loss on the data direction: an nftables table in the router namespace whose forward
//! chain drops packets from the sender link to the receiver link with probability `loss`.
//! The table lives in the namespace and goes with it.

use crate::command::run_with_stdin;
use crate::error::Result;
use crate::link::{loss_per_resolution, LOSS_RESOLUTION};
use crate::wiring::{ROUTER_TO_RECEIVER_IF, ROUTER_TO_SENDER_IF};

/// The nftables table (family `ip`) holding the loss rule.
pub const TABLE: &str = "mocc";

/// Creates the table and its forward chain, with the loss rule when `loss` > 0.
pub fn install(router_ns: &str, loss: f64) -> Result<()> {
    let script = format!(
        "table ip {TABLE} {{\n  chain forward {{\n    type filter hook forward priority 0; policy accept;\n  }}\n}}\n{}",
        rule_script(loss)
    );
    nft_script(router_ns, &script)
}

/// Replaces the loss rule atomically (one nft transaction).
pub fn change(router_ns: &str, loss: f64) -> Result<()> {
    let script = format!("flush chain ip {TABLE} forward\n{}", rule_script(loss));
    nft_script(router_ns, &script)
}

/// Replaces the loss rule with one that drops every packet towards the receiver (an outage).
pub fn drop_all(router_ns: &str) -> Result<()> {
    let script = format!(
        "flush chain ip {TABLE} forward\nadd rule ip {TABLE} forward iifname \"{ROUTER_TO_SENDER_IF}\" oifname \"{ROUTER_TO_RECEIVER_IF}\" drop\n"
    );
    nft_script(router_ns, &script)
}

/// The `add rule` line for `loss`, empty when nothing is to be dropped.
pub fn rule_script(loss: f64) -> String {
    match loss_per_resolution(loss) {
        0 => String::new(),
        threshold => format!(
            "add rule ip {TABLE} forward iifname \"{ROUTER_TO_SENDER_IF}\" oifname \"{ROUTER_TO_RECEIVER_IF}\" numgen random mod {LOSS_RESOLUTION} < {threshold} drop\n"
        ),
    }
}

fn nft_script(router_ns: &str, script: &str) -> Result<()> {
    // `ip netns exec NS nft -f -`, the script on stdin.
    run_with_stdin(
        "ip",
        &["netns", "exec", router_ns, "nft", "-f", "-"],
        Some(script),
    )
    .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_compares_with_the_scaled_probability() {
        assert_eq!(
            rule_script(0.0125),
            "add rule ip mocc forward iifname \"to-snd\" oifname \"to-rcv\" numgen random mod 10000 < 125 drop\n"
        );
        assert_eq!(rule_script(0.0), "");
        assert_eq!(rule_script(0.00004), "");
    }
}
