//! What the benchmarks share.

use std::future::Future;

/// Run a benchmark's `main` on the runtime every benchmark uses: tokio multi-thread with
/// 2 workers (the reference machine has 2 cores).
#[allow(clippy::expect_used)]
pub fn block_on<F: Future>(bench: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("a tokio runtime for the benchmark")
        .block_on(bench)
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none): what
/// benches that repeat a case report, since single runs on a shared machine drift.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut sorted: Vec<f64> = values.into_iter().collect();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => 0.0,
        n if n % 2 == 1 => sorted[n / 2],
        n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    }
}

/// The CPU time (user and system, every thread) this process has used so far, from
/// `/proc/self/stat`; `None` where that cannot be read. Its unit is Linux's `USER_HZ` tick,
/// 10 ms, so measure windows of seconds.
pub fn process_cpu_time() -> Option<std::time::Duration> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // The fields after the command name (which may hold spaces and parentheses); the first is
    // field 3 (state), so utime (14) and stime (15) are the 12th and 13th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some(std::time::Duration::from_millis(
        (ticks(11)? + ticks(12)?) * 10,
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_process_cpu_time_grows_with_work() {
        let before = super::process_cpu_time().expect("/proc/self/stat");
        let started = std::time::Instant::now();
        let mut x = 0u64;
        while started.elapsed() < std::time::Duration::from_millis(100) {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        let used = super::process_cpu_time().expect("/proc/self/stat") - before;
        assert!(used >= std::time::Duration::from_millis(50), "{used:?}");
    }

    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(super::median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(super::median([]), 0.0);
    }
}
