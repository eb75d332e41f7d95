//! Why one run of a cell failed, by the step that failed: the scenario asks what this run
//! cannot give (the same at every try, so not tried again), this machine or a host could not
//! be used, a process of the system did not start or exited, or the load failed.

/// Why a run failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// A template names a placeholder this run has no value for.
    #[error(transparent)]
    NoValue(#[from] crate::template::NoValue),
    /// The scenario asks what cannot be done: an entry for no target, a workload its kind
    /// refuses.
    #[error("{0}")]
    Scenario(String),
    /// A command line that is not words.
    #[error(transparent)]
    Words(#[from] crate::words::Unclosed),
    /// A readiness probe that cannot be made as written.
    #[error(transparent)]
    Probe(#[from] crate::ready::ProbeError),
    /// What failed belongs to `about` (a role, a config file, a fixture): its cause after it.
    #[error("{about}: {cause}")]
    In {
        /// What it belongs to.
        about: String,
        /// Why it failed.
        cause: Box<RunError>,
    },
    /// This machine could not give what the run needs: a free port, a file written, a thread
    /// in a namespace.
    #[error("{0}")]
    Local(String),
    /// A host of the run could not be used: its lab not built, an ssh host down or failing.
    #[error("{0}")]
    Host(String),
    /// A process of the system or a fixture did not start, or was not ready in time.
    #[error("{0}")]
    NotStarted(String),
    /// Processes of the system or fixtures exited before the run ended, each in its words.
    #[error("{}", .0.join("\n"))]
    Crashed(Vec<String>),
    /// The load failed.
    #[error("{0}")]
    Load(String),
    /// It failed on each of its tries; the last one's cause.
    #[error("{last} (on each of {tries} tries)")]
    EveryTry {
        /// The last try's cause.
        last: Box<RunError>,
        /// How many tries.
        tries: u32,
    },
}

impl RunError {
    /// This error as one that belongs to `about`.
    pub fn of(self, about: impl Into<String>) -> Self {
        Self::In { about: about.into(), cause: Box::new(self) }
    }

    /// Whether another try could end otherwise: not when the scenario itself is at fault.
    pub fn worth_retrying(&self) -> bool {
        match self {
            Self::NoValue(_) | Self::Scenario(_) | Self::Words(_) | Self::Probe(_) => false,
            Self::EveryTry { .. } => false,
            Self::In { cause, .. } => cause.worth_retrying(),
            Self::Local(_)
            | Self::Host(_)
            | Self::NotStarted(_)
            | Self::Crashed(_)
            | Self::Load(_) => true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scenarios_fault_is_not_tried_again_wherever_it_is_found() {
        let missing = RunError::from(crate::template::NoValue("port.entry".into())).of("server");
        assert_eq!(missing.to_string(), "server: {port.entry} has no value");
        assert!(!missing.worth_retrying());
        assert!(!RunError::Scenario("unbalanced quote".into()).of("file.cfg").worth_retrying());
        let crashed = RunError::Crashed(vec!["a exited (1)".into(), "b exited (2)".into()]);
        assert_eq!(crashed.to_string(), "a exited (1)\nb exited (2)");
        assert!(
            crashed.worth_retrying() && RunError::NotStarted("x".into()).of("y").worth_retrying()
        );
        let every =
            RunError::EveryTry { last: Box::new(RunError::Load("refused".into())), tries: 3 };
        assert_eq!(every.to_string(), "refused (on each of 3 tries)");
    }
}
