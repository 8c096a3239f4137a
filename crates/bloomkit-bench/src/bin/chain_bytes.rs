//! `chain_bytes`: the bits a growing `BF.*` filter holds, layer by layer, in RedisBloom's
//! classic layers and in two ways of sizing blocked ones, from `bloomkit::sizing` alone (no
//! filter is built, so it runs in a moment):
//!
//! ```text
//! cargo run --release -p bloomkit-bench --bin chain_bytes
//! ```
//!
//! RedisBloom's chain gives layer i (capacity n·2^i) the rate p·0.5^(i+1) in the fewest
//! classic bits. The blocked chain the server builds does the same in 512-bit lines
//! (tightening 0.5). The alternative gives the first blocked layer RedisBloom's bytes (its
//! classic bits, in whole lines), at the rate those bytes reach, q; the chain still has to sum
//! to p, so the tightening becomes 1 − q/p and every later layer is tighter than
//! RedisBloom's. The table says which costs less, and after how many layers.

use bloomkit::sizing;

/// Bits of the first `layers` layers of a chain for `n` keys at rate `p`, tightening `t`.
fn chain_bits(n: u64, p: f64, t: f64, blocked: bool, layers: u32) -> u64 {
    let mut rate = p * (1.0 - t);
    let mut capacity = n;
    let mut total = 0;
    for _ in 0..layers {
        total += if blocked {
            sizing::blocked_plan(capacity, rate).map(|plan| plan.num_bits)
        } else {
            sizing::optimal_num_bits(capacity, rate)
        }
        .expect("a reachable rate");
        rate *= t;
        capacity *= 2;
    }
    total
}

fn main() {
    let n = 1_000_000;
    println!("| target | layers | blocked, tightening 0.5 | blocked, first layer in RedisBloom's bytes | its first-layer rate and tightening |");
    println!("|---|---|---|---|---|");
    for p in [0.01, 0.001] {
        let classic_first = sizing::optimal_num_bits(n, p * 0.5).expect("a reachable rate");
        let lines = classic_first / sizing::LINE_BITS * sizing::LINE_BITS;
        let first = sizing::blocked_fp_rate(n, lines, sizing::blocked_num_hashes(n, lines));
        let t = 1.0 - first / p;
        for layers in 1..=6 {
            let redisbloom = chain_bits(n, p, 0.5, false, layers) as f64;
            let half = chain_bits(n, p, 0.5, true, layers) as f64 / redisbloom;
            let matched = chain_bits(n, p, t, true, layers) as f64 / redisbloom;
            println!(
                "| {}% | {layers} | {half:.3}× RedisBloom's bits | {matched:.3}× | {:.3}%, {t:.3} |",
                p * 100.0,
                first * 100.0
            );
        }
    }
}
