//! Output of a call: kept in memory up to a cap, spilled to a file past it, with the tail kept
//! for the model. Memory stays bounded (cap + tail) whatever a tool prints.

use std::collections::VecDeque;
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;

/// How much of the end of a spilled stream stays in memory for the result.
pub(crate) const TAIL_BYTES: usize = 32 * 1024;

#[derive(Debug)]
pub(crate) struct Collector {
    cap: usize,
    head: Vec<u8>,
    tail: VecDeque<u8>,
    total: u64,
    spill_path: PathBuf,
    spill: Option<File>,
    spill_error: Option<String>,
}

/// What a stream came to.
#[derive(Debug)]
pub(crate) struct Collected {
    /// All of it when it fit under the cap, else the first `cap` bytes.
    pub head: Vec<u8>,
    /// The last bytes when it was spilled (empty otherwise).
    pub tail: Vec<u8>,
    pub total: u64,
    /// Where the whole stream is, when it did not fit.
    pub spill: Option<PathBuf>,
    pub spill_error: Option<String>,
}

impl Collector {
    pub(crate) fn new(cap: usize, spill_path: PathBuf) -> Self {
        Collector { cap, head: Vec::new(), tail: VecDeque::new(), total: 0, spill_path, spill: None, spill_error: None }
    }

    pub(crate) fn push(&mut self, chunk: &[u8]) {
        self.total += chunk.len() as u64;
        if self.spill.is_none() && self.spill_error.is_none() && self.head.len() + chunk.len() <= self.cap {
            self.head.extend_from_slice(chunk);
            return;
        }
        if self.spill.is_none() && self.spill_error.is_none() {
            self.start_spill();
        }
        if let Some(file) = &mut self.spill
            && let Err(e) = file.write_all(chunk)
        {
            self.spill_error = Some(format!("writing {}: {e}", self.spill_path.display()));
            self.spill = None;
        }
        // Fill the head up to the cap, the rest goes to the tail ring.
        let room = self.cap.saturating_sub(self.head.len());
        let (to_head, rest) = chunk.split_at(room.min(chunk.len()));
        self.head.extend_from_slice(to_head);
        let rest = if rest.len() > TAIL_BYTES { &rest[rest.len() - TAIL_BYTES..] } else { rest };
        let overflow = (self.tail.len() + rest.len()).saturating_sub(TAIL_BYTES);
        self.tail.drain(..overflow.min(self.tail.len()));
        self.tail.extend(rest);
    }

    fn start_spill(&mut self) {
        let opened = self
            .spill_path
            .parent()
            .map(std::fs::create_dir_all)
            .unwrap_or(Ok(()))
            .and_then(|_| File::create(&self.spill_path));
        match opened.and_then(|mut f| f.write_all(&self.head).map(|_| f)) {
            Ok(f) => self.spill = Some(f),
            Err(e) => self.spill_error = Some(format!("creating {}: {e}", self.spill_path.display())),
        }
    }

    pub(crate) fn finish(mut self) -> Collected {
        let spill = self.spill.take().map(|_| self.spill_path.clone());
        Collected {
            head: self.head,
            tail: self.tail.into_iter().collect(),
            total: self.total,
            spill,
            spill_error: self.spill_error,
        }
    }
}

/// Text of at most `max` bytes from the start of `bytes`, cut on a character boundary.
pub(crate) fn head_text(bytes: &[u8], max: usize) -> String {
    let mut cut = bytes.len().min(max);
    while cut > 0 && cut < bytes.len() && bytes[cut] & 0xC0 == 0x80 {
        cut -= 1;
    }
    String::from_utf8_lossy(&bytes[..cut]).into_owned()
}

/// Text of at most `max` bytes from the end of `bytes`, starting after a newline when one is near.
pub(crate) fn tail_text(bytes: &[u8], max: usize) -> String {
    let mut start = bytes.len().saturating_sub(max);
    while start < bytes.len() && bytes[start] & 0xC0 == 0x80 {
        start += 1;
    }
    let mut slice = &bytes[start..];
    if start > 0
        && let Some(nl) = slice.iter().position(|b| *b == b'\n')
        && nl < slice.len() / 4
    {
        slice = &slice[nl + 1..];
    }
    String::from_utf8_lossy(slice).into_owned()
}

#[cfg(test)]
#[path = "output_tests.rs"]
mod tests;
