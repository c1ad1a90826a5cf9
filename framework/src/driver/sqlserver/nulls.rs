//! NULL parameters that every TDS server reads.
//!
//! tiberius sends a `None` string, byte string or time with no type information: TDS type 0x1F
//! (NULLTYPE). SQL Server accepts that; Babelfish for PostgreSQL answers "Data type 0x1F is
//! unknown". So no such NULL is ever bound: each place the statement uses that parameter
//! (`@Pn`) is written as `CAST(NULL AS <type>)`, the NULL of exactly the type tiberius declares
//! for the parameter, and the parameter itself is bound as a typed NULL (`int`) the statement no
//! longer reads. Integers, GUIDs and bits carry their type even when NULL, and are bound as they
//! are. The statement means the same on every server; only its text differs per pattern of
//! NULLs, so SQL Server caches at most a few plans per statement.

use std::borrow::Cow;

use tiberius::{ColumnData, ToSql};

use crate::driver::Param;

/// The stand-in bound for a NULL written into the statement's text: an `int` NULL, which tiberius
/// sends with its type (INTN of length 0).
struct Unread;

impl ToSql for Unread {
    fn to_sql(&self) -> ColumnData<'_> {
        ColumnData::I32(None)
    }
}

static UNREAD: Unread = Unread;

/// The SQL Server type of a NULL that tiberius would send untyped, or `None` for a parameter it
/// sends as it is.
fn untyped_null(param: &Param<'_>) -> Option<&'static str> {
    match param {
        Param::Text(None) => Some("nvarchar(max)"),
        Param::Bytes(None) => Some("varbinary(max)"),
        Param::Time(None) => Some("datetime2"),
        Param::Text(Some(_))
        | Param::Bytes(Some(_))
        | Param::Time(Some(_))
        | Param::Uuid(_)
        | Param::BigInt(_)
        | Param::Int(_) => None,
    }
}

/// `sql` and `params` as tiberius should get them: every NULL it would send untyped written into
/// the text as a typed NULL (see the module's documentation). Borrows `sql` unchanged when no
/// parameter needs it.
pub(crate) fn bindable<'a>(
    sql: &'a str,
    params: &'a [Param<'a>],
) -> (Cow<'a, str>, Vec<&'a dyn ToSql>) {
    let mut text = Cow::Borrowed(sql);
    let mut refs: Vec<&'a dyn ToSql> = Vec::with_capacity(params.len());
    for (index, param) in params.iter().enumerate() {
        match untyped_null(param) {
            Some(sql_type) => {
                let replaced = replace_parameter(&text, index + 1, sql_type);
                text = Cow::Owned(replaced);
                refs.push(&UNREAD);
            }
            None => refs.push(param),
        }
    }
    (text, refs)
}

/// `sql` with every use of parameter `@P<number>` (and not of `@P<number><digit>`) replaced by
/// `CAST(NULL AS <sql_type>)`.
fn replace_parameter(sql: &str, number: usize, sql_type: &str) -> String {
    let name = format!("@P{number}");
    let replacement = format!("CAST(NULL AS {sql_type})");
    let mut out = String::with_capacity(sql.len() + 16);
    let mut rest = sql;
    while let Some(at) = rest.find(&name) {
        let after = &rest[at + name.len()..];
        let longer = after.starts_with(|c: char| c.is_ascii_digit());
        out.push_str(&rest[..at]);
        out.push_str(if longer { &name } else { &replacement });
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untyped_nulls_become_typed_nulls_in_the_text() {
        let sql = "INSERT INTO t VALUES (@P1, @P2, @P3, @P4, @P10, @P11)";
        let params = [
            Param::Uuid(uuid::Uuid::nil()),
            Param::Text(None),
            Param::Bytes(None),
            Param::Time(None),
            Param::BigInt(None),
            Param::Text(Some("x")),
            Param::Int(1),
            Param::Int(2),
            Param::Int(3),
            Param::Text(None),
            Param::Text(Some("y")),
        ];
        let (text, refs) = bindable(sql, &params);
        assert_eq!(
            text,
            "INSERT INTO t VALUES (@P1, CAST(NULL AS nvarchar(max)), CAST(NULL AS varbinary(max)), \
             CAST(NULL AS datetime2), CAST(NULL AS nvarchar(max)), @P11)"
        );
        assert_eq!(refs.len(), params.len(), "every position is still bound");
        // The stand-ins are typed NULLs; the others are the parameters as they were.
        for (index, r) in refs.iter().enumerate() {
            let data = r.to_sql();
            match index {
                1 | 2 | 3 | 9 => assert!(matches!(data, ColumnData::I32(None)), "{data:?}"),
                4 => assert!(matches!(data, ColumnData::I64(None)), "{data:?}"),
                5 => assert!(matches!(data, ColumnData::String(Some(_))), "{data:?}"),
                _ => {}
            }
        }
    }

    #[test]
    fn a_statement_without_untyped_nulls_is_borrowed_as_it_is() {
        let sql = "SELECT @P1, @P2";
        let params = [Param::Text(Some("a")), Param::BigInt(None)];
        let (text, _) = bindable(sql, &params);
        assert!(matches!(text, Cow::Borrowed(_)));
        assert_eq!(text, sql);
    }

    #[test]
    fn every_use_of_a_parameter_is_replaced() {
        let sql = "SELECT CASE WHEN @P2 IS NULL THEN 0 ELSE LEN(@P2) END, @P20";
        let params = [Param::Int(1), Param::Text(None)];
        let (text, _) = bindable(sql, &params);
        assert_eq!(
            text,
            "SELECT CASE WHEN CAST(NULL AS nvarchar(max)) IS NULL THEN 0 ELSE \
             LEN(CAST(NULL AS nvarchar(max))) END, @P20"
        );
    }
}
