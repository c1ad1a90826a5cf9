//! Splits a script of several statements into its statements, for servers that must be sent one
//! statement at a time: Citus forwards the text of a `CREATE INDEX` on a distributed table to the
//! worker nodes as it came, and a worker refuses a text of several commands ("cannot insert
//! multiple commands into a prepared statement").

/// The statements of `script`, in order, each without its closing `;`; statements that hold
/// nothing but whitespace and comments are left out. A `;` inside a quoted string, a quoted
/// identifier, a comment or a dollar-quoted body (`$$ … $$`, `$tag$ … $tag$`) does not end a
/// statement.
pub(crate) fn statements_of(script: &str) -> Vec<&str> {
    let bytes = script.as_bytes();
    let mut statements = Vec::new();
    let (mut start, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'\'' if i > 0 && matches!(bytes[i - 1], b'E' | b'e') && starts_word(bytes, i - 1) => {
                i = after_escaped_string(bytes, i)
            }
            b'\'' | b'"' => i = after_quoted(bytes, i, bytes[i]),
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                i = script[i..].find('\n').map_or(bytes.len(), |n| i + n + 1)
            }
            b'/' if bytes.get(i + 1) == Some(&b'*') => {
                i = script[i + 2..]
                    .find("*/")
                    .map_or(bytes.len(), |n| i + 2 + n + 2)
            }
            b'$' => i = after_dollar_quoted(script, i),
            b';' => {
                statements.push(&script[start..i]);
                i += 1;
                start = i;
            }
            _ => i += 1,
        }
    }
    statements.push(&script[start..]);
    statements.retain(|s| !only_comments(s));
    statements
}

/// The index after the string or identifier quoted by `quote` that starts at `at` (a doubled
/// quote inside it is the quote itself).
fn after_quoted(bytes: &[u8], at: usize, quote: u8) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        if bytes[i] == quote {
            if bytes.get(i + 1) == Some(&quote) {
                i += 2;
                continue;
            }
            return i + 1;
        }
        i += 1;
    }
    bytes.len()
}

/// Whether the byte at `at` begins a word (nothing that could be part of a name before it).
fn starts_word(bytes: &[u8], at: usize) -> bool {
    at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_')
}

/// The index after the escape string (`E'…'`) whose quote is at `at`: a backslash escapes the
/// next character, a doubled quote is the quote itself.
fn after_escaped_string(bytes: &[u8], at: usize) -> usize {
    let mut i = at + 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'\'' if bytes.get(i + 1) == Some(&b'\'') => i += 2,
            b'\'' => return i + 1,
            _ => i += 1,
        }
    }
    bytes.len()
}

/// The index after the dollar-quoted body that starts at `at`, or `at + 1` when the `$` there
/// opens none (a parameter such as `$1`).
fn after_dollar_quoted(script: &str, at: usize) -> usize {
    let rest = &script[at + 1..];
    let tag_len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    let tag = &rest[..tag_len];
    if !rest[tag_len..].starts_with('$') || tag.starts_with(|c: char| c.is_ascii_digit()) {
        return at + 1;
    }
    let delimiter = format!("${tag}$");
    let body = at + delimiter.len();
    script[body..]
        .find(&delimiter)
        .map_or(script.len(), |n| body + n + delimiter.len())
}

/// Whether `text` holds nothing but whitespace and `--` comments.
fn only_comments(text: &str) -> bool {
    text.lines()
        .map(str::trim)
        .all(|line| line.is_empty() || line.starts_with("--"))
}

#[cfg(test)]
mod tests {
    use super::statements_of;

    #[test]
    fn semicolons_inside_strings_names_comments_and_bodies_do_not_split() {
        let script =
            "-- a comment; still a comment\nCREATE TABLE \"a;b\" (x text DEFAULT 'c;''d');\n\
                      /* e; f */ SELECT $$ g; h $$, $t$ i; $$ $t$, $1;\n\n-- the end\n";
        assert_eq!(
            statements_of(script),
            vec![
                "-- a comment; still a comment\nCREATE TABLE \"a;b\" (x text DEFAULT 'c;''d')",
                "\n/* e; f */ SELECT $$ g; h $$, $t$ i; $$ $t$, $1",
            ]
        );
    }

    #[test]
    fn an_escaped_quote_in_an_escape_string_does_not_end_it() {
        assert_eq!(
            statements_of("SELECT E'a\\'; b'; SELECT 'c'"),
            vec!["SELECT E'a\\'; b'", " SELECT 'c'"]
        );
        // A name ending in `e` before a plain string is no escape string.
        assert_eq!(
            statements_of("SELECT name'x\\'; SELECT 1"),
            vec!["SELECT name'x\\'", " SELECT 1"]
        );
    }

    #[test]
    fn a_script_without_a_closing_semicolon_keeps_its_last_statement() {
        assert_eq!(
            statements_of("CREATE TABLE a (x int); CREATE INDEX b ON a (x)"),
            vec!["CREATE TABLE a (x int)", " CREATE INDEX b ON a (x)"]
        );
        assert!(statements_of("  \n-- nothing\n").is_empty());
    }
}
