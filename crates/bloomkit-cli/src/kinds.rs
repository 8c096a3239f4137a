//! The filter kinds the CLI offers: the library's list ([`FilterKind::ALL`]), so that a kind
//! added to the library is a `--kind` here, a row of `size` and of `demo`, without an edit
//! to this crate.

use bloomkit::FilterKind;
use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};

/// `--kind`'s parser: every kind of the library's list, by name, with its summary as help.
pub fn kind_parser() -> impl TypedValueParser<Value = FilterKind> {
    PossibleValuesParser::new(
        FilterKind::ALL.map(|kind| PossibleValue::new(kind.name()).help(kind.summary())),
    )
    // The parser accepts only the names listed, so the lookup finds one; the default kind
    // were it ever not to.
    .map(|name| FilterKind::from_name(&name).unwrap_or(FilterKind::DEFAULT))
}

/// `name:` padded so that the notes after it line up, for lists that name every kind (and
/// the atomic filter): `blocked:  `.
pub fn label(name: &str) -> String {
    let width = FilterKind::ALL
        .map(|kind| kind.name().len())
        .into_iter()
        .max()
        .unwrap_or(0)
        + 2;
    format!("{:<width$}", format!("{name}:"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::builder::TypedValueParser;

    #[test]
    fn every_kind_parses_by_its_name() {
        let cmd = clap::Command::new("t");
        let arg = clap::Arg::new("kind");
        for kind in FilterKind::ALL {
            let parsed = kind_parser()
                .parse_ref(&cmd, Some(&arg), std::ffi::OsStr::new(kind.name()))
                .unwrap();
            assert_eq!(parsed, kind);
        }
        assert!(kind_parser()
            .parse_ref(&cmd, Some(&arg), std::ffi::OsStr::new("atomic"))
            .is_err());
    }
}
