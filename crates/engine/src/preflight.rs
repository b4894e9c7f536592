//! [`Compactor::preflight`]: before each model call, count, decide (none / remind / compact) and, when
//! compaction is due, compact: the stateless host of the one step in [`crate::step`]. A failed
//! compaction of a request that still fits is not an error: the request goes out unchanged with a
//! warning.

use crate::compactor::Compactor;
use crate::error::CompactError;
use crate::report::Report;
use crate::step::{decide, Due, Settled};
use compact_core::boundary::natural_boundary;
use compact_core::model::Conversation;
use compact_core::normalize::normalize;
use compact_core::policy::Decision;
use compact_core::provider::compaction_call;

/// What preflight decided and what to send.
#[derive(Debug, Clone)]
pub struct Preflight {
    /// The decision taken on the input's count.
    pub decision: Decision,
    /// What to send: the compacted conversation, or the (normalised) input.
    pub conversation: Conversation,
    /// The compaction report, when a compaction happened.
    pub report: Option<Report>,
    /// Non-fatal problems (e.g. compaction made no progress but the request fits).
    pub warnings: Vec<String>,
}

impl Compactor {
    /// Counts `conv`, decides, and compacts when the decision says so. Errors only when the request
    /// cannot be sent (over the usable budget and not compactable) or the summariser failed under a
    /// `fail` policy. A provider compaction call ([`compaction_call`]) is never compacted nor
    /// normalised: it is returned as it is, with a warning when compaction was due.
    pub async fn preflight(&self, conv: &Conversation) -> Result<Preflight, CompactError> {
        let count = self.counter().total(conv);
        let due = Due {
            count,
            // The boundary is only read when a floor is set: without one it cannot change the
            // decision.
            at: self.budget().boundary.and_then(|_| natural_boundary(conv)),
            manual: false,
        };
        let decision = decide(due, self.budget(), self.policy());
        let unchanged = |warnings: Vec<String>| Preflight {
            decision,
            conversation: normalize(conv, &self.rules_for(conv)).conversation,
            report: None,
            warnings,
        };
        if let Some(call) = compaction_call(conv) {
            // The provider's own compaction call goes as it is, not even normalised.
            let warnings = match decision {
                Decision::Compact(_) => {
                    vec![CompactError::ProviderCompactionCall(call).to_string()]
                }
                _ => Vec::new(),
            };
            return Ok(Preflight {
                decision,
                conversation: conv.clone(),
                report: None,
                warnings,
            });
        }
        let Decision::Compact(reason) = decision else {
            return Ok(unchanged(Vec::new()));
        };
        match self
            .compact_due(conv, &reason, self.budget().fits(count))
            .await
        {
            Settled::Compacted(done) => Ok(Preflight {
                decision,
                conversation: done.conversation,
                warnings: done.report.warnings.clone(),
                report: Some(done.report),
            }),
            Settled::Skipped(e) => Ok(unchanged(vec![Settled::skipped_warning(&e)])),
            Settled::Failed(e) => Err(e),
        }
    }
}
