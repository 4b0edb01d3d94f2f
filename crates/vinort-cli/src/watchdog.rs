//! `--timeout`: the whole command (session build and runs) ends within a deadline, and a
//! process holding a compile OpenVINO never finished leaves without running library
//! destructors under it.
//!
//! OpenVINO's C API cannot cancel a compile, so a command past its deadline cannot be stopped
//! from inside: a watchdog thread ends the process with [`TIMED_OUT`] (124, as `timeout(1)`),
//! distinct from a test mismatch (1). It leaves with `_exit`, like a process that runs
//! `exit` while a compile goes on in another thread could crash in OpenVINO's static
//! destructors; for the same reason [`leave`] ends a process that abandoned a compile at its
//! deadline (`--compile-timeout`) the same way.

use std::io::Write;
use std::time::Duration;

/// The exit code of a command that ran past `--timeout`.
pub const TIMED_OUT: u8 = 124;

/// `90`, `90s`, `1.5s`, `500ms`, `2m`, `1h`; `0` is no deadline.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let n: f64 = number.parse().map_err(|_| format!("'{s}' is not a duration such as 90s, 500ms or 2m"))?;
    let scale = match unit.trim() {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        other => return Err(format!("'{other}' is not a unit of time (ms, s, m, h)")),
    };
    Duration::try_from_secs_f64(n * scale).map_err(|_| format!("'{s}' is not a duration that fits"))
}

/// Ends the process with [`TIMED_OUT`] once `limit` has passed (nothing for a zero limit).
pub fn arm(limit: Duration) {
    if limit.is_zero() {
        return;
    }
    let spawned = std::thread::Builder::new().name("vinort-timeout".into()).spawn(move || {
        std::thread::sleep(limit);
        eprintln!(
            "error: vinort did not finish within {} (--timeout): ended here, since an OpenVINO compile cannot be interrupted",
            vinort::ir::deadline::human(limit)
        );
        leave_now(TIMED_OUT);
    });
    if let Err(e) = spawned {
        eprintln!("warning: --timeout is not in force: no thread for it ({e})");
    }
}

/// Leaves with `code`: through `_exit` when a compile abandoned at its deadline may still run
/// in OpenVINO, else normally.
pub fn leave(code: u8) -> std::process::ExitCode {
    if vinort::ir::deadline::abandoned() > 0 {
        leave_now(code);
    }
    std::process::ExitCode::from(code)
}

/// Ends the process now with `code`, as [`leave`] would.
pub fn exit(code: u8) -> ! {
    if vinort::ir::deadline::abandoned() > 0 {
        leave_now(code);
    }
    std::process::exit(i32::from(code))
}

fn leave_now(code: u8) -> ! {
    let _ = std::io::stdout().flush();
    let _ = std::io::stderr().flush();
    // SAFETY: `_exit` ends the process at once; nothing runs after it in this process.
    unsafe { libc::_exit(i32::from(code)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        for bad in ["", "s", "ten", "5 parsecs", "-1", "1e400"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
