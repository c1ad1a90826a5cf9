//! The statement that watches every idle queue of a process on one database at once
//! (`watch_wait.sql`, SQL Server): built from one `queue_ready.sql` or `messages_ready.sql` part
//! per queue, each given its place in the list and, for the shared table, the parameter that
//! holds its queue's name.

use super::dialect::{render, Placeholder};

/// What a part leaves open until the watch statement is built.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hole {
    /// `{label}`: the queue's place in the list.
    Label,
    /// `{destination}`: the parameter holding the queue's name.
    Destination,
}

/// One queue's part of the watch statement, rendered for its table, with its place and its
/// name's parameter still open. The holes are cut out before the table's name is filled in, so
/// a queue named `{label}` stays a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadyPart {
    /// The rendered text around the holes: one more than there are holes.
    pieces: Vec<String>,
    holes: Vec<Hole>,
}

impl ReadyPart {
    /// Cuts `template` at its `{label}` and `{destination}` holes and renders the rest with
    /// `replacements`, as [`render`] does.
    pub fn new(template: &str, replacements: &[(&str, &str)]) -> Self {
        let mut pieces = Vec::new();
        let mut holes = Vec::new();
        let mut rest = template;
        loop {
            let next = [
                ("{label}", Hole::Label),
                ("{destination}", Hole::Destination),
            ]
            .into_iter()
            .filter_map(|(marker, hole)| rest.find(marker).map(|at| (at, marker, hole)))
            .min_by_key(|(at, _, _)| *at);
            match next {
                Some((at, marker, hole)) => {
                    pieces.push(render(&rest[..at], replacements));
                    holes.push(hole);
                    rest = &rest[at + marker.len()..];
                }
                None => {
                    pieces.push(render(rest, replacements));
                    break;
                }
            }
        }
        ReadyPart { pieces, holes }
    }

    /// Whether the part compares `Destination` with a parameter (the shared table).
    pub fn takes_destination(&self) -> bool {
        self.holes.contains(&Hole::Destination)
    }

    /// The text with its place `label` and its name's parameter `destination` filled in.
    fn fill(&self, label: usize, destination: &str) -> String {
        let mut out = String::new();
        let last = self.pieces.len().saturating_sub(1);
        for (i, piece) in self.pieces.iter().enumerate() {
            // The part ends a term of a UNION ALL: no `;` of its own.
            let piece = if i == last {
                piece.trim_end_matches([';', '\n', ' '])
            } else {
                piece.as_str()
            };
            out.push_str(piece);
            match self.holes.get(i) {
                Some(Hole::Label) => out.push_str(&label.to_string()),
                Some(Hole::Destination) => out.push_str(destination),
                None => {}
            }
        }
        out
    }
}

/// A watch statement for a list of queues.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WatchSql {
    /// `watch_wait.sql`: looks on the server until a queue holds a message. Parameters: the
    /// looks, the time between them (`hh:mm:ss.fff`), then [`Self::destinations`].
    pub wait: String,
    /// The parts alone, one look: for a server without `WAITFOR`. Same parameters as `wait`
    /// (the first two unused).
    pub look: String,
}

/// Builds the watch statement of `parts`, in order: a queue that holds a message comes back as
/// its index in `parts`. The parts that take a destination are numbered from the third
/// parameter on, in order.
pub(crate) fn watch_sql(
    placeholder: Placeholder,
    wait_template: &str,
    parts: &[&ReadyPart],
) -> WatchSql {
    let prefix = match placeholder {
        Placeholder::Dollar => "$",
        Placeholder::Question => "?",
        Placeholder::AtP => "@P",
    };
    let mut next_parameter = 3;
    let ready = parts
        .iter()
        .enumerate()
        .map(|(label, part)| {
            let destination = if part.takes_destination() {
                next_parameter += 1;
                format!("{prefix}{}", next_parameter - 1)
            } else {
                String::new()
            };
            part.fill(label, &destination)
        })
        .collect::<Vec<_>>()
        .join("\nUNION ALL\n");
    WatchSql {
        wait: render(wait_template, &[("ready", &ready)]),
        look: ready,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_queue_named_like_a_hole_stays_a_name() {
        let part = ReadyPart::new(
            "SELECT {label} WHERE EXISTS (SELECT 1 FROM {table})",
            &[("table", "[dbo].[{label}]")],
        );
        let sql = watch_sql(
            Placeholder::AtP,
            "WAIT ({ready}); {ready};",
            &[&part, &part],
        );
        assert_eq!(
            sql.look,
            "SELECT 0 WHERE EXISTS (SELECT 1 FROM [dbo].[{label}])\nUNION ALL\n\
             SELECT 1 WHERE EXISTS (SELECT 1 FROM [dbo].[{label}])"
        );
        assert!(sql.wait.starts_with("WAIT (SELECT 0 "), "{}", sql.wait);
    }

    #[test]
    fn destinations_are_numbered_after_the_looks_and_the_delay() {
        let table = ReadyPart::new("SELECT {label} FROM t", &[]);
        let shared = ReadyPart::new("SELECT {label} WHERE d = {destination};\n", &[]);
        assert!(shared.takes_destination() && !table.takes_destination());
        let sql = watch_sql(Placeholder::AtP, "{ready}", &[&shared, &table, &shared]);
        assert_eq!(
            sql.look,
            "SELECT 0 WHERE d = @P3\nUNION ALL\nSELECT 1 FROM t\nUNION ALL\nSELECT 2 WHERE d = @P4"
        );
    }
}
