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

#[cfg(test)]
mod tests {
    #[test]
    fn median_of_odd_even_and_empty() {
        assert_eq!(super::median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(super::median([4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(super::median([]), 0.0);
    }
}
