//! A mechanism's state per process and program (docs/machine.md, "Processes"): what a
//! mechanism keeps for each (process, image) its source names through
//! [`crate::record::Observer::process`], the running one's in the mechanism's own fields
//! and the others parked here, swapped in when their records come. A run of one process and
//! one program never swaps: it pays nothing.

use crate::record::{Mapping, ProcessSwitch};

/// Most (process, image) rows kept; past it, a new one's records join the last one made (a
/// guest that forks without end cannot grow a mechanism without bound).
pub const MAX_PROCESS_ROWS: usize = 4096;

/// Which process and program a row is.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ProcessKey {
    /// The process.
    pub pid: u32,
    /// Its parent (0: none inside the machine).
    pub parent: u32,
    /// Which of its programs: 0 the one it started with (a forked child's is its parent's),
    /// one more per `execve`.
    pub image: u32,
    /// The program's path as the guest named it (its mapping 0; empty if never mapped).
    pub program: String,
    /// The host file it was read from, if known.
    pub host_path: Option<std::path::PathBuf>,
}

/// The rows of one mechanism: `T` is what it keeps per (process, image).
#[derive(Clone, Debug)]
pub struct ProcessRows<T> {
    /// The running row's key and creation number; `None` before any switch.
    running: Option<(ProcessKey, usize)>,
    /// The program named before the first switch (the first process's first program), and
    /// its host file.
    first_program: (String, Option<std::path::PathBuf>),
    parked: Vec<(ProcessKey, usize, T)>,
    made: usize,
}

impl<T> Default for ProcessRows<T> {
    fn default() -> Self {
        ProcessRows {
            running: None,
            first_program: (String::new(), None),
            parked: Vec::new(),
            made: 0,
        }
    }
}

impl<T> ProcessRows<T> {
    /// Rows with none made yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The records from here belong to `p`'s process and image: the running row's state
    /// (`running`) is parked and `p`'s swapped in, made by `make` the first time. `false`
    /// when nothing changed: the same row, or the row limit reached (the records then stay
    /// with the last row made).
    pub fn switch(&mut self, p: &ProcessSwitch, running: &mut T, make: impl FnOnce() -> T) -> bool {
        let (cur, cur_n) = match self.running.take() {
            Some(r) => r,
            None => {
                self.made = 1;
                let (program, host_path) = std::mem::take(&mut self.first_program);
                let first = ProcessKey {
                    pid: p.from_pid,
                    parent: 0,
                    image: p.from_image,
                    program,
                    host_path,
                };
                (first, 0)
            }
        };
        if (cur.pid, cur.image) == (p.pid, p.image) {
            self.running = Some((cur, cur_n));
            return false;
        }
        let found = self
            .parked
            .iter()
            .position(|(k, _, _)| (k.pid, k.image) == (p.pid, p.image));
        let (key, n, mut state) = match found {
            Some(i) => self.parked.swap_remove(i),
            None if self.made >= MAX_PROCESS_ROWS => {
                self.running = Some((cur, cur_n));
                return false;
            }
            None => {
                self.made += 1;
                let key = ProcessKey {
                    pid: p.pid,
                    parent: p.parent,
                    image: p.image,
                    program: String::new(),
                    host_path: None,
                };
                (key, self.made - 1, make())
            }
        };
        std::mem::swap(running, &mut state);
        self.parked.push((cur, cur_n, state));
        self.running = Some((key, n));
        true
    }

    /// An object mapped: the running row's program is its mapping 0.
    pub fn mapped(&mut self, m: &Mapping<'_>) {
        if m.index != 0 {
            return;
        }
        let name = m.path.to_string_lossy().into_owned();
        let host = m.host_path.map(std::path::Path::to_path_buf);
        match &mut self.running {
            Some((k, _)) if k.program.is_empty() => {
                k.program = name;
                k.host_path = host;
            }
            Some(_) => {}
            None if self.first_program.0.is_empty() => self.first_program = (name, host),
            None => {}
        }
    }

    /// The running row's number: the order in which it was made (0: the first process's
    /// first program, also before any switch).
    pub fn running(&self) -> usize {
        self.running.as_ref().map_or(0, |r| r.1)
    }

    /// Whether the source ever named more than one (process, image).
    pub fn switched(&self) -> bool {
        self.made > 1
    }

    /// Every row with its state, `running` the running row's, in the order they were made:
    /// the first process's first program first.
    pub fn finish(self, running: T) -> Vec<(ProcessKey, T)> {
        let (key, n) = self.running.unwrap_or_else(|| {
            let (program, host_path) = self.first_program;
            let first = ProcessKey {
                program,
                host_path,
                ..ProcessKey::default()
            };
            (first, 0)
        });
        let mut rows: Vec<(ProcessKey, usize, T)> = self.parked;
        rows.push((key, n, running));
        rows.sort_by_key(|r| r.1);
        rows.into_iter().map(|(k, _, t)| (k, t)).collect()
    }

    /// The running row's state and every parked one's, in no particular order (to drain
    /// buffers before [`ProcessRows::finish`]).
    pub fn parked_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.parked.iter_mut().map(|(_, _, t)| t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn switch(pid: u32, image: u32, from: (u32, u32)) -> ProcessSwitch {
        ProcessSwitch {
            pid,
            parent: 7,
            image,
            from_pid: from.0,
            from_image: from.1,
        }
    }

    #[test]
    fn rows_swap_in_and_come_back_in_creation_order() {
        let mut rows = ProcessRows::new();
        let mut running = 0u64;
        let path = std::path::Path::new("/bin/sh");
        rows.mapped(&Mapping {
            index: 0,
            start: 0,
            len: 1,
            offset: 0,
            path,
            host_path: None,
            build_id: None,
        });
        running += 5; // the first process's records
        assert!(rows.switch(&switch(2, 0, (1, 0)), &mut running, || 100));
        running += 1;
        assert!(rows.switch(&switch(1, 0, (2, 0)), &mut running, || 200));
        running += 2;
        assert!(!rows.switch(&switch(1, 0, (1, 0)), &mut running, || 300));
        assert!(rows.switch(&switch(1, 1, (1, 0)), &mut running, || 400));
        assert!(rows.switched());
        let done = rows.finish(running);
        let got: Vec<(u32, u32, u64)> = done.iter().map(|(k, t)| (k.pid, k.image, *t)).collect();
        assert_eq!(got, vec![(1, 0, 7), (2, 0, 101), (1, 1, 400)]);
        assert_eq!(done[0].0.program, "/bin/sh");
        assert_eq!(done[1].0.parent, 7);
    }

    #[test]
    fn past_the_limit_records_stay_with_the_last_row_made() {
        let mut rows = ProcessRows::new();
        let mut running = 0u32;
        for pid in 2..(MAX_PROCESS_ROWS as u32 + 10) {
            let from = (pid - 1, 0);
            rows.switch(&switch(pid, 0, from), &mut running, || 0);
            running += 1;
        }
        let done = rows.finish(running);
        assert_eq!(done.len(), MAX_PROCESS_ROWS);
        let total: u32 = done.iter().map(|(_, t)| *t).sum();
        assert_eq!(total, MAX_PROCESS_ROWS as u32 + 8);
    }
}
