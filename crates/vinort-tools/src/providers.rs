//! Provider lists as tools take them on the command line: `-e openvino,cpu` names the
//! providers in priority order, `-i "key|value key|value"` configures OpenVINO with the keys of
//! ONNX Runtime's OpenVINO execution provider, `--strict` turns "skip a provider that cannot
//! start" into an error. Every tool parses them here, so a list means the same everywhere.
//!
//! ```
//! use vinort_tools::providers::ProviderList;
//! let list: ProviderList = "OpenVINO, cpu".parse()?;
//! assert_eq!(list.names(), ["openvino", "cpu"]);
//! let providers = list.providers(&vinort::OpenVino::cpu(), false);
//! assert_eq!(providers.len(), 2);
//! # Ok::<(), vinort_tools::providers::ProviderError>(())
//! ```

use std::str::FromStr;

use vinort::openvino::{OpenVinoOptions, OptionError};
use vinort::{Cpu, OpenVino, Provider};

/// One entry of a provider list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProviderKind {
    /// `openvino` (or `ov`).
    OpenVino,
    /// `cpu`: vinort's Rust kernels.
    Cpu,
}

/// Why a provider list or its OpenVINO options were refused. The messages are the CLI's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProviderError {
    /// A name that is not a provider.
    #[error("unknown provider '{name}' (available: openvino, cpu)")]
    Unknown {
        /// The name, trimmed and lower-cased.
        name: String,
        /// Whether an `openvino` entry came before it: the CLI has always reported a bad `-i`
        /// first then, as it configured OpenVINO while walking the list.
        after_openvino: bool,
    },
    /// `-i` is not a valid OpenVINO option string.
    #[error("-i: {0}")]
    Options(#[source] OptionError),
}

/// Provider names in priority order, from a comma-separated list such as `openvino,cpu`
/// (case and spaces around names do not matter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProviderList {
    entries: Vec<(String, ProviderKind)>,
}

impl FromStr for ProviderList {
    type Err = ProviderError;

    fn from_str(s: &str) -> Result<ProviderList, ProviderError> {
        let mut entries: Vec<(String, ProviderKind)> = vec![];
        for name in s.split(',').map(|p| p.trim().to_ascii_lowercase()) {
            let kind = match name.as_str() {
                "cpu" => ProviderKind::Cpu,
                "openvino" | "ov" => ProviderKind::OpenVino,
                _ => {
                    let after_openvino = entries.iter().any(|(_, k)| *k == ProviderKind::OpenVino);
                    return Err(ProviderError::Unknown { name, after_openvino });
                }
            };
            entries.push((name, kind));
        }
        Ok(ProviderList { entries })
    }
}

impl ProviderList {
    /// The names as given, trimmed and lower-cased (`ov` stays `ov`).
    pub fn names(&self) -> Vec<&str> {
        self.entries.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// The kinds, in priority order.
    pub fn kinds(&self) -> impl Iterator<Item = ProviderKind> + '_ {
        self.entries.iter().map(|(_, k)| *k)
    }

    /// Whether OpenVINO is in the list.
    pub fn has_openvino(&self) -> bool {
        self.kinds().any(|k| k == ProviderKind::OpenVino)
    }

    /// Fresh providers (a session consumes its own): every `openvino` entry is `openvino`,
    /// registered to fail the session build when `strict` and to be skipped otherwise.
    pub fn providers(&self, openvino: &OpenVino, strict: bool) -> Vec<Provider> {
        self.providers_with(openvino, &Cpu::default(), strict)
    }

    /// [`ProviderList::providers`] with every `cpu` entry configured as `cpu`.
    pub fn providers_with(&self, openvino: &OpenVino, cpu: &Cpu, strict: bool) -> Vec<Provider> {
        self.kinds()
            .map(|k| match k {
                ProviderKind::Cpu => cpu.clone().into(),
                ProviderKind::OpenVino => {
                    let p: Provider = openvino.clone().into();
                    if strict { p.error_on_failure() } else { p }
                }
            })
            .collect()
    }
}

/// Parses `-i` options (`key|value key|value`).
pub fn openvino_options(options: &str) -> Result<OpenVinoOptions, ProviderError> {
    OpenVinoOptions::parse_cli(options).map_err(ProviderError::Options)
}

/// The provider arguments every `vinort` subcommand that builds a session takes, flattened
/// into it with `#[command(flatten)]`.
#[cfg(feature = "cli")]
#[derive(Debug, Clone, clap::Args)]
pub struct ProviderArgs {
    /// Providers in priority order, comma separated (openvino, cpu).
    #[arg(short = 'e', long, default_value = "openvino,cpu")]
    pub providers: String,
    /// OpenVINO options as "key|value key|value" (device_type, precision, num_streams...).
    #[arg(short = 'i', long, default_value = "")]
    pub options: String,
    /// Fail instead of skipping a provider that cannot start.
    #[arg(long)]
    pub strict: bool,
    /// Threads of the Cpu provider's kernels (default: rayon's pool, one per logical CPU).
    #[arg(long, value_name = "N")]
    pub cpu_threads: Option<usize>,
    /// How much the Cpu provider's graph optimizer rewrites its partitions (like ONNX Runtime's
    /// graph optimization level).
    #[arg(long, value_enum, default_value_t = OptimizationArg::All)]
    pub cpu_optimization: OptimizationArg,
    /// Whether the partitioner weighs each region's cost on the providers that can run it and
    /// gives it to the cheaper (off: only regions with no heavy op move).
    #[arg(long, value_enum, default_value_t = Switch::On)]
    pub cost_model: Switch,
}

/// An on/off option value.
#[cfg(feature = "cli")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Switch {
    /// On.
    On,
    /// Off.
    Off,
}

/// `--cpu-optimization` values.
#[cfg(feature = "cli")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum OptimizationArg {
    /// Every node runs as written.
    Disabled,
    /// Constant folding and Conv+BatchNormalization.
    Basic,
    /// Basic plus fused kernels (GELU, Conv/Gemm/MatMul + bias + residual + activation).
    Extended,
    /// Extended plus layout changes (f32 Convs in the blocked NCHWc layout on AVX-512 CPUs, QLinearConvs channels-last).
    All,
}

#[cfg(feature = "cli")]
impl From<OptimizationArg> for vinort::GraphOptimizationLevel {
    fn from(a: OptimizationArg) -> Self {
        match a {
            OptimizationArg::Disabled => vinort::GraphOptimizationLevel::Disabled,
            OptimizationArg::Basic => vinort::GraphOptimizationLevel::Basic,
            OptimizationArg::Extended => vinort::GraphOptimizationLevel::Extended,
            OptimizationArg::All => vinort::GraphOptimizationLevel::All,
        }
    }
}

#[cfg(feature = "cli")]
impl ProviderArgs {
    /// The providers the arguments name. `-i` is parsed only when OpenVINO is listed.
    pub fn build(&self) -> Result<Vec<Provider>, ProviderError> {
        let list = match self.providers.parse::<ProviderList>() {
            Ok(list) => list,
            Err(e) => {
                if matches!(e, ProviderError::Unknown { after_openvino: true, .. }) {
                    self.check_options()?;
                }
                return Err(e);
            }
        };
        let openvino =
            if list.has_openvino() { OpenVino::with_options(self.check_options()?) } else { OpenVino::cpu() };
        let mut cpu = Cpu::default().optimization(self.cpu_optimization.into());
        if let Some(n) = self.cpu_threads {
            cpu = cpu.threads(n);
        }
        Ok(list.providers_with(&openvino, &cpu, self.strict))
    }

    /// The parsed `-i` options (checked even when OpenVINO is not listed, by tools that want a
    /// typo never to go unnoticed).
    pub fn check_options(&self) -> Result<OpenVinoOptions, ProviderError> {
        openvino_options(&self.options)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_parse_names_in_order_and_refuse_unknown_ones() {
        let l: ProviderList = " OV ,Cpu".parse().unwrap();
        assert_eq!(l.names(), ["ov", "cpu"]);
        assert_eq!(l.kinds().collect::<Vec<_>>(), [ProviderKind::OpenVino, ProviderKind::Cpu]);
        let e = "cpu,TPU".parse::<ProviderList>().unwrap_err();
        assert_eq!(e.to_string(), "unknown provider 'tpu' (available: openvino, cpu)");
        assert!(matches!(e, ProviderError::Unknown { after_openvino: false, .. }));
        assert!(matches!(
            "openvino,x".parse::<ProviderList>(),
            Err(ProviderError::Unknown { after_openvino: true, .. })
        ));
        assert!("".parse::<ProviderList>().is_err());
    }

    #[test]
    fn strict_applies_to_openvino_only() {
        let l: ProviderList = "openvino,cpu".parse().unwrap();
        let p = l.providers(&OpenVino::cpu(), true);
        assert_eq!(p.len(), 2);
        assert!(openvino_options("precision").unwrap_err().to_string().starts_with("-i: "));
    }

    #[cfg(feature = "cli")]
    #[test]
    fn a_bad_option_before_a_bad_name_is_reported_first() {
        let args = |e: &str, i: &str| ProviderArgs {
            providers: e.into(),
            options: i.into(),
            strict: false,
            cpu_threads: None,
            cpu_optimization: OptimizationArg::All,
            cost_model: Switch::On,
        };
        assert!(matches!(args("openvino,tpu", "precision").build(), Err(ProviderError::Options(_))));
        assert!(matches!(args("tpu,openvino", "precision").build(), Err(ProviderError::Unknown { .. })));
        assert!(matches!(args("cpu", "precision").build(), Ok(p) if p.len() == 1));
        assert_eq!(args("openvino,cpu", "").build().unwrap().len(), 2);
    }
}
