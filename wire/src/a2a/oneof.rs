//! The "exactly one member" rule of proto `oneof`s, with one error wording for all of them.

/// Index of the single present member, or a message naming the members and what was found.
pub(crate) fn exactly_one(what: &str, members: &[(&str, bool)]) -> Result<usize, String> {
    let present: Vec<usize> = members
        .iter()
        .enumerate()
        .filter(|(_, (_, is_set))| *is_set)
        .map(|(i, _)| i)
        .collect();
    match present.as_slice() {
        [one] => Ok(*one),
        _ => {
            let names: Vec<String> = members
                .iter()
                .map(|(name, _)| format!("`{name}`"))
                .collect();
            let found = if present.is_empty() {
                "none".to_owned()
            } else {
                let found: Vec<String> = present
                    .iter()
                    .map(|&i| format!("`{}`", members[i].0))
                    .collect();
                found.join(" and ")
            };
            Err(format!(
                "{what} needs exactly one of {}, found {found}",
                names.join(", ")
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_members_and_the_findings() {
        assert_eq!(exactly_one("x", &[("a", false), ("b", true)]), Ok(1));
        assert_eq!(
            exactly_one("a part", &[("text", false), ("raw", false)]),
            Err("a part needs exactly one of `text`, `raw`, found none".to_owned())
        );
        assert_eq!(
            exactly_one("a part", &[("text", true), ("raw", true), ("url", false)]),
            Err(
                "a part needs exactly one of `text`, `raw`, `url`, found `text` and `raw`"
                    .to_owned()
            )
        );
    }
}
