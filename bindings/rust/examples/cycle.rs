//! An acquire+release cycle of a directory lock from Rust, timed per cycle:
//! prints the median in ns as one JSON line (bench/bindings/run.sh runs it
//! beside the C library's own cycle).
//!
//! usage: cycle DIR [CYCLES]
use holdfast::Lock;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = args.get(1).expect("usage: cycle DIR [CYCLES]");
    let cycles: usize = args.get(2).map(|s| s.parse().expect("CYCLES")).unwrap_or(2000);
    let path = format!("{dir}/rust.lock");
    let mut times = Vec::with_capacity(cycles);
    let mut lock = Some(Lock::new(&path).expect("lock handle")); // one handle, as a program keeps it
    for _ in 0..cycles {
        let t = Instant::now();
        let g = lock.take().unwrap().acquire().expect("acquire");
        lock = Some(g.unlock().expect("release"));
        times.push(t.elapsed().as_nanos() as u64);
    }
    times.sort_unstable();
    println!("{{\"lang\":\"rust\",\"cycles\":{cycles},\"median_ns\":{}}}", times[cycles / 2]);
}
