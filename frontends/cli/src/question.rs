//! The model's questions (`ui_request` of kind `question`) asked on the terminal, one question
//! a line: a number or a label picks an option (several, comma-separated, where `multiple`),
//! anything else is a free answer read as its schema's type; an answer its schema refuses is
//! asked again, saying why; an empty line declines the whole form. A pure state machine: the
//! caller prints [`Form::prompt`] and feeds it lines.

use serde_json::{Map, Value, json};
use superpi_proto::question::{KIND, QuestionAnswer, QuestionRequest, conforms};

pub(crate) struct Form {
    pub request_id: String,
    request: QuestionRequest,
    index: usize,
    answers: Map<String, Value>,
}

/// What a line did.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// Ask the next question (or this one again, after the reason printed).
    Ask(Option<String>),
    /// Every question is answered, or the form declined: the outcome for `ui.respond`.
    Done(Value),
}

impl Form {
    /// The form of a `ui_request` of kind `question`, else None.
    pub fn of(request_id: &str, request: &Map<String, Value>) -> Option<Form> {
        if request.get("kind").and_then(Value::as_str) != Some(KIND) {
            return None;
        }
        let request: QuestionRequest = serde_json::from_value(Value::Object(request.clone())).ok()?;
        if request.questions.is_empty() {
            return None;
        }
        Some(Form { request_id: request_id.to_string(), request, index: 0, answers: Map::new() })
    }

    /// What the current question shows: its text, its options numbered, and the prompt.
    pub fn prompt(&self) -> String {
        let q = &self.request.questions[self.index];
        let mut text = String::new();
        if self.index == 0 {
            text.push_str(&format!("? {} (an empty line declines)\n", self.request.message()));
        }
        if self.request.questions.len() > 1 || self.request.title.is_some() {
            text.push_str(&format!("  {}\n", q.question));
        }
        for (n, option) in q.options.iter().enumerate() {
            match &option.description {
                Some(d) => text.push_str(&format!("  {}) {} — {d}\n", n + 1, option.label)),
                None => text.push_str(&format!("  {}) {}\n", n + 1, option.label)),
            }
        }
        let hint = match (q.options.len(), q.multiple) {
            (0, _) => q.schema.get("type").and_then(Value::as_str).unwrap_or("string").to_string(),
            (n, false) => format!("1-{n}"),
            (n, true) => format!("1-{n}, comma-separated"),
        };
        format!("{text}answer [{hint}]: ")
    }

    /// Takes a typed line as the current question's answer.
    pub fn take(&mut self, line: &str) -> Step {
        let line = line.trim();
        if line.is_empty() {
            return Step::Done(QuestionAnswer::Decline.to_outcome());
        }
        let q = &self.request.questions[self.index];
        let value = match (q.options.is_empty(), q.multiple) {
            (false, true) => Value::Array(line.split(',').map(|part| self.option(part.trim())).collect()),
            (false, false) => self.option(line),
            (true, _) => typed(&q.schema, line),
        };
        if let Err(why) = conforms(&q.schema, &value) {
            return Step::Ask(Some(format!("that answer {why}")));
        }
        self.answers.insert(q.id.clone(), value);
        self.index += 1;
        match self.index == self.request.questions.len() {
            true => Step::Done(QuestionAnswer::Accept(std::mem::take(&mut self.answers)).to_outcome()),
            false => Step::Ask(None),
        }
    }

    /// An option by its number or its label (anything else stays as typed, and is refused).
    fn option(&self, word: &str) -> Value {
        let options = &self.request.questions[self.index].options;
        let by_number = word.parse::<usize>().ok().and_then(|n| n.checked_sub(1)).and_then(|n| options.get(n));
        json!(by_number.map(|o| o.label.as_str()).unwrap_or(word))
    }
}

/// A free answer read as its schema's type (as typed when it does not read as one).
fn typed(schema: &Value, line: &str) -> Value {
    let parsed = match schema.get("type").and_then(Value::as_str) {
        Some("integer") => line.parse::<i64>().ok().map(Value::from),
        Some("number") => line.parse::<f64>().ok().map(Value::from),
        Some("boolean") => match line {
            "y" | "yes" | "true" => Some(json!(true)),
            "n" | "no" | "false" => Some(json!(false)),
            _ => None,
        },
        _ => None,
    };
    parsed.unwrap_or_else(|| json!(line))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn form() -> Form {
        let request = json!({
            "kind": "question", "tool_call_id": "c1", "title": "Setup",
            "questions": [
                {"id": "db", "question": "Which database?", "options": [{"label": "sqlite"}, {"label": "postgres"}],
                 "schema": {"type": "string", "enum": ["sqlite", "postgres"]}},
                {"id": "tags", "question": "Tags?", "options": [{"label": "a"}, {"label": "b"}], "multiple": true,
                 "schema": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}}},
                {"id": "port", "question": "Port?", "schema": {"type": "integer", "minimum": 1}}
            ]
        });
        Form::of("q1", request.as_object().unwrap()).unwrap()
    }

    #[test]
    fn lines_answer_each_question_and_a_bad_one_is_asked_again() {
        let mut f = form();
        assert_eq!(
            f.prompt(),
            "? Setup (an empty line declines)\n  Which database?\n  1) sqlite\n  2) postgres\nanswer [1-2]: "
        );
        assert_eq!(f.take("3"), Step::Ask(Some("that answer is not one of [\"sqlite\",\"postgres\"]".into())));
        assert_eq!(f.take("2"), Step::Ask(None));
        assert_eq!(f.take("1, b"), Step::Ask(None));
        assert!(f.prompt().ends_with("answer [integer]: "), "{}", f.prompt());
        assert_eq!(f.take("zero"), Step::Ask(Some("that answer is not of type integer".into())));
        assert_eq!(
            f.take("5432"),
            Step::Done(json!({"action": "accept", "answers": {"db": "postgres", "tags": ["a", "b"], "port": 5432}}))
        );
        assert_eq!(form().take(" "), Step::Done(json!({"action": "decline"})));
        assert!(Form::of("q", json!({"kind": "read_text_file"}).as_object().unwrap()).is_none());
    }
}
