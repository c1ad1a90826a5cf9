//! Index names as the user created them, where the catalog reports another.
//!
//! Babelfish for PostgreSQL stores a T-SQL index under a PostgreSQL name of its own and lists
//! that name in `sys.indexes`: the index name and the table name, folded to lower case and cut
//! so that the whole fits PostgreSQL's 63 bytes, followed by 32 hexadecimal digits (an MD5).
//! `[Index_RowVersion]` on `[Sales]` is listed as `index_rowversionsales` + the digits. SQL
//! Server lists the name as created. Reading the catalog, Nimbus turns such a name back into
//! the index's own (in lower case: the case is gone); names of any other form are kept as they
//! are. SQL Server compares index names regardless of case, as its default collations do.

/// How many hexadecimal digits Babelfish appends.
const DIGEST_LEN: usize = 32;

/// The name of `table`'s index as created, from the name the catalog lists (`found`).
pub(crate) fn index_name_as_created(found: String, table: &str) -> String {
    let Some(stem_len) = found.len().checked_sub(DIGEST_LEN) else {
        return found;
    };
    if stem_len == 0
        || !found.is_char_boundary(stem_len)
        || !found[stem_len..].bytes().all(|b| b.is_ascii_hexdigit())
    {
        return found;
    }
    let stem = &found[..stem_len];
    let table = table.to_lowercase();
    if let Some(name) = stem.strip_suffix(&table).filter(|n| !n.is_empty()) {
        return name.to_string();
    }
    // Cut short at 63 bytes: only the start of the table's name is there.
    if found.len() == POSTGRES_MAX_NAME {
        let cut = (1..table.len())
            .rev()
            .filter(|&n| table.is_char_boundary(n))
            .find(|&n| stem.len() > n && stem.ends_with(&table[..n]));
        if let Some(n) = cut {
            return stem[..stem.len() - n].to_string();
        }
    }
    found
}

/// PostgreSQL's longest name, in bytes.
const POSTGRES_MAX_NAME: usize = 63;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn babelfish_names_become_the_created_names() {
        assert_eq!(
            index_name_as_created(
                "index_rowversionindexedb253fab7c9090530f6145db738d584b4".into(),
                "Indexed"
            ),
            "index_rowversion"
        );
        assert_eq!(
            index_name_as_created(
                "index_expiresindexed55713a6d8eb17b1aad42c5c3c6d40694".into(),
                "Indexed"
            ),
            "index_expires"
        );
    }

    #[test]
    fn names_cut_short_lose_the_start_of_the_table_name() {
        // "ix_nimbusmessages_dequeue" + "nimbus" of "nimbusmessages": 63 bytes in all.
        assert_eq!(
            index_name_as_created(
                "ix_nimbusmessages_dequeuenimbus38e31647b673f0276ab4fa9b538152e8".into(),
                "NimbusMessages"
            ),
            "ix_nimbusmessages_dequeue"
        );
    }

    #[test]
    fn other_names_are_kept() {
        for name in [
            "Index_RowVersion",
            "Sales_Index_RowVersion",
            "nimbusmessages_pkey",
            "b253fab7c9090530f6145db738d584b4",
        ] {
            assert_eq!(
                index_name_as_created(name.into(), "NimbusMessages"),
                name,
                "{name}"
            );
        }
    }
}
