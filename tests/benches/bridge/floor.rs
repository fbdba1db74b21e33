//! The memory floor under "GetTask against log length, every task": what two dependent loads
//! cost at each log's size, whatever the code around them.
//!
//! Any GetTask that keeps a task's state in memory and its content in the log makes at least
//! two dependent loads: the task's entry (to learn where its records are), then the records'
//! bytes. The floor makes exactly those two and nothing else, over working sets no design can
//! shrink much further: one 64-byte line of memory per task (a third of what the view holds
//! today), and the log's real segment files, mapped as the embedded log maps them. Its extra
//! cost at 1 M records over 1 k is the least any GetTask pays there; set beside the 1.2 ratio's
//! allowance (a fifth of GetTask's p50 at 1 k), it says whether the target is reachable.
//!
//! The same with more lines before the file's byte models a longer chain: with four (a
//! hash table's control bytes, its slot, the task's entry, the log's index entry), then the
//! batch, it is the chain a GetTask walks today, each line a load that waits for the last.

use std::fs::File;
use std::hint::black_box;
use std::path::Path;
use std::time::Instant;

use hdrhistogram::Histogram;
use memmap2::Mmap;

/// One 64-byte line per task: the least memory an in-memory entry per task can take.
const LINE_WORDS: usize = 8;

/// Every file under `dir` (the log's segments and whatever else it keeps), mapped.
fn mapped_files(dir: &Path, maps: &mut Vec<Mmap>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            mapped_files(&path, maps);
        } else if std::fs::metadata(&path).unwrap().len() > 0 {
            // SAFETY: the bench's own closed log; nothing writes these files while mapped.
            #[allow(unsafe_code)]
            let map = unsafe { Mmap::map(&File::open(&path).unwrap()) }.unwrap();
            maps.push(map);
        }
    }
}

/// The floor over one log: `tasks` entries, the files under `dir`.
pub struct Floor {
    /// `hops` lines per task; each line's first word says where the next load goes.
    lines: Vec<u64>,
    hops: usize,
    maps: Vec<Mmap>,
    /// Where each map starts in the maps' bytes laid end to end.
    starts: Vec<u64>,
    total: u64,
    tasks: usize,
    next: usize,
    pub latency_ns: Histogram<u64>,
}

impl Floor {
    /// `hops` dependent lines of memory per request (at least 1), then the file's byte.
    pub fn new(dir: &Path, tasks: usize, hops: usize) -> Floor {
        let hops = hops.max(1);
        let mut maps = Vec::new();
        mapped_files(dir, &mut maps);
        let mut starts = Vec::with_capacity(maps.len());
        let mut total = 0u64;
        for map in &maps {
            starts.push(total);
            total += map.len() as u64;
        }
        // Each line's first word is a random number: the next line to load, and at the last
        // hop where the task's "records" are, scattered over the files like a task's records
        // in an interleaved log; either is unknown until the line is read.
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut lines = vec![0u64; tasks * hops * LINE_WORDS];
        for line in 0..tasks * hops {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            lines[line * LINE_WORDS] = seed;
        }
        Floor {
            lines,
            hops,
            maps,
            starts,
            total,
            tasks,
            next: 0,
            latency_ns: Histogram::new(3).unwrap(),
        }
    }

    /// `requests` chains of dependent loads, starting at tasks with GetCase's stride.
    pub fn run(&mut self, requests: usize, record: bool) {
        let line_count = (self.tasks * self.hops) as u64;
        for _ in 0..requests {
            self.next = (self.next + 7919) % self.tasks;
            let started = Instant::now();
            let mut word = black_box(self.lines[self.next * LINE_WORDS]);
            for _ in 1..self.hops {
                let line = (word % line_count) as usize;
                word = black_box(self.lines[line * LINE_WORDS]);
            }
            let at = word % self.total;
            let file = self.starts.partition_point(|start| *start <= at) - 1;
            let byte = self.maps[file][(at - self.starts[file]) as usize];
            black_box(byte);
            if record {
                self.latency_ns
                    .record(started.elapsed().as_nanos() as u64)
                    .unwrap();
            }
        }
    }

    /// A warm-up pass over every task: every page touched once, as GetCase's warm-up does.
    pub fn warm(&mut self) {
        self.run(self.tasks, false);
        for map in &self.maps {
            let sum: u64 = map.iter().step_by(4096).map(|b| u64::from(*b)).sum();
            black_box(sum);
        }
    }

    pub fn mapped_bytes(&self) -> u64 {
        self.total
    }
}
