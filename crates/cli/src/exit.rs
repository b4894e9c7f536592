//! Exit codes and error reporting: 0 success, 2 bad input or usage, 3 insufficient budget, 1 other.

use std::fmt;
use std::process::ExitCode;

/// Marks an error as caused by the user's input (exit code 2).
#[derive(Debug)]
pub struct BadInput(pub String);

impl fmt::Display for BadInput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadInput {}

/// Exit code for bad input or usage.
pub const EXIT_BAD_INPUT: u8 = 2;
/// Exit code when the irreducible floor does not fit the budget.
pub const EXIT_INSUFFICIENT_BUDGET: u8 = 3;
/// Exit code for any other failure.
pub const EXIT_FAILURE: u8 = 1;

/// Prints the error chain on stderr and picks the exit code.
pub fn report(err: &anyhow::Error) -> ExitCode {
    if is_broken_pipe(err) {
        // The reader went away (`compactctl inspect ... | head`): not a failure.
        return ExitCode::SUCCESS;
    }
    eprintln!("compactctl: error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    ExitCode::from(code_for(err))
}

/// The exit code an error maps to.
pub fn code_for(err: &anyhow::Error) -> u8 {
    if err.chain().any(|c| c.is::<BadInput>()) {
        EXIT_BAD_INPUT
    } else if err.chain().any(is_insufficient_budget) {
        EXIT_INSUFFICIENT_BUDGET
    } else {
        EXIT_FAILURE
    }
}

fn is_insufficient_budget(err: &(dyn std::error::Error + 'static)) -> bool {
    matches!(
        err.downcast_ref::<compact_engine::CompactError>(),
        Some(compact_engine::CompactError::InsufficientBudget { .. })
    )
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}
