//! Long core calls (a fit, a selection) on a worker thread without the GIL, stopped cleanly by
//! Ctrl-C: the calling thread runs Python's signal handlers while it waits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use glshift::model::{CheckedParams, Dataset, FitOptions, FitOutcome};
use glshift::train::Progress;
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;

use crate::py_err;

/// Marker payload of the unwind that stops a fit after Ctrl-C (raised from the progress
/// callback with `resume_unwind`, so no panic message is printed, and caught in the worker).
struct Cancelled;

/// Runs `params.fit_owned(data)` on a worker thread without the GIL, interruptible
/// ([`interruptible`]). `data` (already a copy of the caller's arrays) is preprocessed in
/// place rather than copied once more.
pub(crate) fn fit_interruptible(
    py: Python<'_>,
    params: &CheckedParams,
    data: Dataset,
    holdout: Option<&[usize]>,
) -> PyResult<FitOutcome> {
    interruptible(py, "fit", move |tick| {
        let mut progress = |_: Progress| tick();
        let opts = FitOptions { progress: Some(&mut progress), holdout, ..FitOptions::default() };
        params.fit_owned(data, opts)
    })
}

/// Runs `work` on a worker thread without the GIL; the calling thread wakes every 100 ms to
/// run Python's signal handlers. `work` calls its `tick` after every training iteration. On
/// KeyboardInterrupt (or any exception a handler raises) the next `tick` unwinds the worker
/// with [`Cancelled`], the worker is joined, and the exception is returned. `what` names the
/// work in the message of an internal error.
pub(crate) fn interruptible<T: Send>(
    py: Python<'_>,
    what: &str,
    work: impl FnOnce(&mut dyn FnMut()) -> glshift::Result<T> + Send,
) -> PyResult<T> {
    let cancel = AtomicBool::new(false);
    let done = (Mutex::new(false), Condvar::new());
    std::thread::scope(|s| {
        let (cancel, done) = (&cancel, &done);
        let worker = s.spawn(move || {
            let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                let mut tick = || {
                    if cancel.load(Ordering::Relaxed) {
                        std::panic::resume_unwind(Box::new(Cancelled));
                    }
                };
                work(&mut tick)
            }));
            *done.0.lock().unwrap_or_else(|e| e.into_inner()) = true;
            done.1.notify_all();
            result
        });
        loop {
            let finished = py.detach(|| {
                let guard = done.0.lock().unwrap_or_else(|e| e.into_inner());
                let (guard, _) = done
                    .1
                    .wait_timeout_while(guard, Duration::from_millis(100), |d| !*d)
                    .unwrap_or_else(|e| e.into_inner());
                *guard
            });
            if finished {
                break;
            }
            if let Err(e) = py.check_signals() {
                cancel.store(true, Ordering::Relaxed);
                let _ = py.detach(move || worker.join());
                return Err(e);
            }
        }
        match worker.join() {
            Ok(Ok(outcome)) => outcome.map_err(py_err),
            Ok(Err(payload)) | Err(payload) => {
                let msg = payload
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| payload.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "unknown panic".into());
                Err(PyRuntimeError::new_err(format!(
                    "internal error in glshift's {what} (please report): {msg}"
                )))
            }
        }
    })
}
