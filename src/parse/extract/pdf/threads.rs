//! The threads PDFs are read on: each with a large stack (pdf-extract recurses into forms), and
//! kept a moment after a reading for the next one. Starting a thread with such a stack and
//! unmapping it afterwards cost the kernel about 0.1 ms, as much as reading a small PDF takes (one
//! message in fifteen of the bench archive carries one).
//!
//! A thread waits [`IDLE`] for its next document and then ends, so that what a deep reading
//! touched of its stack is not held while the server only serves. There are never more threads
//! than readings alive at once, which the callers bound (a place in a [`crate::par::Quota`] for
//! each, stragglers included): a reading finding no thread waiting starts one.

use std::io;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use super::STACK;

/// One reading, run to its end on a reading thread.
pub(super) type Task = Box<dyn FnOnce() + Send>;

/// How long a thread waits for its next document before it ends.
const IDLE: Duration = Duration::from_secs(1);

/// The threads waiting for a document: each one's number and the way to hand it one. The last to
/// have finished is the first asked (its stack is the one in memory).
static WAITING: Mutex<Vec<(u64, Sender<Task>)>> = Mutex::new(Vec::new());

/// Numbers the threads, so that one ending can find itself among those waiting.
static NUMBER: AtomicU64 = AtomicU64::new(0);

fn waiting() -> MutexGuard<'static, Vec<(u64, Sender<Task>)>> {
    WAITING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Runs `task` on a waiting reading thread, or on a new one; an error when no thread could be
/// started.
pub(super) fn run(mut task: Task) -> io::Result<()> {
    loop {
        let Some((_, thread)) = waiting().pop() else { break };
        // A thread taken off the list waits for its task (see its loop below); one whose sending
        // fails ended without taking itself off, which only a panic outside a task could do.
        match thread.send(task) {
            Ok(()) => return Ok(()),
            Err(mpsc::SendError(back)) => task = back,
        }
    }
    let number = NUMBER.fetch_add(1, Ordering::Relaxed);
    let (sender, tasks) = mpsc::channel();
    std::thread::Builder::new().name("pdf-text".into()).stack_size(STACK).spawn(move || {
        let mut task = task;
        loop {
            // The tasks catch their own panics; one that did not would still leave this thread
            // fit for the next.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
            waiting().push((number, sender.clone()));
            task = match tasks.recv_timeout(IDLE) {
                Ok(next) => next,
                Err(RecvTimeoutError::Disconnected) => return,
                Err(RecvTimeoutError::Timeout) => {
                    let mut list = waiting();
                    match list.iter().position(|(n, _)| *n == number) {
                        Some(at) => {
                            list.swap_remove(at);
                            return;
                        }
                        // Taken off the list just now: its task is on the way.
                        None => {
                            drop(list);
                            match tasks.recv() {
                                Ok(next) => next,
                                Err(_) => return,
                            }
                        }
                    }
                }
            };
        }
    })?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_task_runs_whether_a_thread_waits_or_not() {
        let (done, results) = mpsc::channel();
        for i in 0..64u32 {
            let done = done.clone();
            run(Box::new(move || {
                let _ = done.send(i);
            }))
            .expect("a thread");
        }
        drop(done);
        let mut got: Vec<u32> = results.iter().collect();
        got.sort_unstable();
        assert_eq!(got, (0..64).collect::<Vec<_>>());
    }

    #[test]
    fn a_task_that_has_not_ended_does_not_hold_back_the_next() {
        let (release, held) = mpsc::channel::<()>();
        let (done, results) = mpsc::channel();
        let first = done.clone();
        run(Box::new(move || {
            let _ = held.recv();
            let _ = first.send("straggler");
        }))
        .expect("a thread");
        run(Box::new(move || {
            let _ = done.send("next");
        }))
        .expect("a thread");
        assert_eq!(results.recv().ok(), Some("next"));
        drop(release);
        assert_eq!(results.recv().ok(), Some("straggler"));
    }

    #[test]
    fn a_panicking_task_leaves_its_thread_fit_for_the_next() {
        super::super::quiet_panics();
        let (done, results) = mpsc::channel();
        for i in 0..8u32 {
            let done = done.clone();
            run(Box::new(move || {
                super::super::QUIET.with(|q| q.set(true));
                let _ = done.send(i);
                if i % 2 == 0 {
                    panic!("a task that fails");
                }
            }))
            .expect("a thread");
        }
        drop(done);
        assert_eq!(results.iter().count(), 8);
    }
}
