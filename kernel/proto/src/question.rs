//! The questions a model puts to the person (`ask_question`), as the kernel's `ui_request` of
//! kind `question` carries them and as `ui.respond` answers them: what every frontend reads to
//! ask (ACP and MCP elicitation, an AG-UI interrupt, the terminal's prompt) and the check of
//! an answer against each question's schema. Pure data and pure functions.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// The `kind` of a question's `ui_request`.
pub const KIND: &str = "question";

/// The `kind` of a `ui_request` that asks the person to open `url` (an MCP server's OAuth
/// login): `{"kind": "url", "url": …, "message": …, "server": …}`, sent only to watchers that
/// said they open URLs. `ui.respond` answers `{"action": "accept" | "decline" | "cancel"}`
/// (accept: the person agreed to open it; the login ends when the browser comes back), and
/// the `ui_resolved` says `logged_in` or why not.
pub const URL_KIND: &str = "url";

/// A `ui_request` of kind `question`: `request_id` is the event's own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionRequest {
    pub kind: String,
    /// The `ask_question` call that asks.
    pub tool_call_id: String,
    /// What the questions are about, in one line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    pub questions: Vec<Question>,
}

/// One question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Question {
    /// The answer's key: `[a-z0-9_]`, unique in its request.
    pub id: String,
    pub question: String,
    /// The choices offered (none: free text, or what `schema` says).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub options: Vec<QuestionOption>,
    /// More than one option may be chosen (the answer is an array).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub multiple: bool,
    /// The JSON Schema of the answer: a string (with `enum` for options), a number, an
    /// integer, a boolean, or an array of option strings. Always present in a request.
    pub schema: Value,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuestionOption {
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// What `ui.respond` sends for a question: `{"action": "accept", "answers": {ID: VALUE}}`,
/// `{"action": "decline"}`, `{"action": "cancel"}`, or, from a frontend that cannot show
/// questions, `{"action": "unavailable", "reason": TEXT}`.
#[derive(Debug, Clone, PartialEq)]
pub enum QuestionAnswer {
    Accept(Map<String, Value>),
    Decline,
    Cancel,
    Unavailable(String),
}

impl QuestionAnswer {
    /// The outcome `ui.respond` carries.
    pub fn to_outcome(&self) -> Value {
        match self {
            QuestionAnswer::Accept(answers) => json!({"action": "accept", "answers": answers}),
            QuestionAnswer::Decline => json!({"action": "decline"}),
            QuestionAnswer::Cancel => json!({"action": "cancel"}),
            QuestionAnswer::Unavailable(reason) => json!({"action": "unavailable", "reason": reason}),
        }
    }

    /// Reads an outcome; anything but an accept with an object of answers is not an answer.
    pub fn from_outcome(outcome: &Value) -> Option<QuestionAnswer> {
        match outcome.get("action")?.as_str()? {
            "accept" => Some(QuestionAnswer::Accept(outcome.get("answers")?.as_object()?.clone())),
            "decline" => Some(QuestionAnswer::Decline),
            "cancel" => Some(QuestionAnswer::Cancel),
            "unavailable" => Some(QuestionAnswer::Unavailable(outcome.get("reason")?.as_str()?.to_string())),
            _ => None,
        }
    }
}

impl QuestionRequest {
    /// The questions as one flat object schema (one property per question, each required):
    /// the form an elicitation asks for.
    pub fn form_schema(&self) -> Value {
        let mut properties = Map::new();
        for q in &self.questions {
            let mut schema = q.schema.as_object().cloned().unwrap_or_default();
            schema.entry("title").or_insert_with(|| json!(q.question));
            properties.insert(q.id.clone(), Value::Object(schema));
        }
        let required: Vec<&str> = self.questions.iter().map(|q| q.id.as_str()).collect();
        json!({"type": "object", "properties": properties, "required": required})
    }

    /// One line saying what is asked (the title, else the first question).
    pub fn message(&self) -> String {
        match (&self.title, self.questions.first()) {
            (Some(title), _) => title.clone(),
            (None, Some(q)) if self.questions.len() == 1 => q.question.clone(),
            (None, _) => format!("{} questions", self.questions.len()),
        }
    }

    /// Checks answers against each question's schema: the answers, keyed by question id, or
    /// what is wrong with them.
    pub fn check(&self, answers: &Map<String, Value>) -> Result<Map<String, Value>, String> {
        if let Some(extra) = answers.keys().find(|k| !self.questions.iter().any(|q| &q.id == *k)) {
            return Err(format!("`{extra}` is not a question asked"));
        }
        let mut checked = Map::new();
        for q in &self.questions {
            let answer = answers.get(&q.id).ok_or_else(|| format!("no answer to `{}`", q.id))?;
            conforms(&q.schema, answer).map_err(|why| format!("the answer to `{}` {why}", q.id))?;
            checked.insert(q.id.clone(), answer.clone());
        }
        Ok(checked)
    }
}

/// Whether `value` conforms to `schema`, for the schemas a question has: `type` (string,
/// number, integer, boolean, array), `enum`, `items`, `minLength`/`maxLength`,
/// `minimum`/`maximum`, `minItems`/`maxItems`.
pub fn conforms(schema: &Value, value: &Value) -> Result<(), String> {
    let num = |key: &str| schema.get(key).and_then(Value::as_f64);
    let ty = schema.get("type").and_then(Value::as_str).unwrap_or("string");
    let typed = match ty {
        "string" => value.is_string(),
        "number" => value.is_number(),
        "integer" => value.is_i64() || value.is_u64(),
        "boolean" => value.is_boolean(),
        "array" => value.is_array(),
        _ => return Err(format!("has a schema of type `{ty}`, which a question cannot have")),
    };
    if !typed {
        return Err(format!("is not of type {ty}"));
    }
    if let Some(choices) = schema.get("enum").and_then(Value::as_array)
        && !choices.contains(value)
    {
        return Err(format!("is not one of {}", Value::Array(choices.clone())));
    }
    if let Some(text) = value.as_str() {
        let chars = text.chars().count() as f64;
        if num("minLength").is_some_and(|n| chars < n) || num("maxLength").is_some_and(|n| chars > n) {
            return Err("has a length out of bounds".into());
        }
    }
    if let Some(n) = value.as_f64()
        && (num("minimum").is_some_and(|m| n < m) || num("maximum").is_some_and(|m| n > m))
    {
        return Err("is out of bounds".into());
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as f64;
        if num("minItems").is_some_and(|m| len < m) || num("maxItems").is_some_and(|m| len > m) {
            return Err("has a number of items out of bounds".into());
        }
        let item_schema = schema.get("items").cloned().unwrap_or(json!({"type": "string"}));
        for item in items {
            conforms(&item_schema, item)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> QuestionRequest {
        QuestionRequest {
            kind: KIND.into(),
            tool_call_id: "c1".into(),
            title: None,
            questions: vec![
                Question {
                    id: "colour".into(),
                    question: "Which colour?".into(),
                    options: vec![QuestionOption { label: "red".into(), description: None }],
                    multiple: false,
                    schema: json!({"type": "string", "enum": ["red", "blue"]}),
                },
                Question {
                    id: "count".into(),
                    question: "How many?".into(),
                    options: vec![],
                    multiple: false,
                    schema: json!({"type": "integer", "minimum": 1}),
                },
            ],
        }
    }

    #[test]
    fn answers_are_checked_against_each_questions_schema() {
        let r = request();
        let ok = json!({"colour": "blue", "count": 3});
        assert_eq!(r.check(ok.as_object().unwrap()).unwrap(), ok.as_object().unwrap().clone());
        for (bad, why) in [
            (json!({"colour": "green", "count": 3}), "is not one of"),
            (json!({"colour": "red", "count": 0}), "out of bounds"),
            (json!({"colour": "red", "count": "3"}), "not of type integer"),
            (json!({"colour": "red"}), "no answer to `count`"),
            (json!({"colour": "red", "count": 1, "x": 1}), "`x` is not a question"),
        ] {
            let err = r.check(bad.as_object().unwrap()).unwrap_err();
            assert!(err.contains(why), "{err}");
        }
        assert!(conforms(&json!({"type": "array", "items": {"enum": ["a"]}}), &json!(["a", "b"])).is_err());
    }

    #[test]
    fn the_form_has_a_required_property_per_question_and_outcomes_round_trip() {
        let form = request().form_schema();
        assert_eq!(form["required"], json!(["colour", "count"]));
        assert_eq!(form["properties"]["count"], json!({"type": "integer", "minimum": 1, "title": "How many?"}));
        let unavailable = QuestionAnswer::Unavailable("no forms".into());
        for answer in [QuestionAnswer::Accept(Map::new()), QuestionAnswer::Decline, QuestionAnswer::Cancel, unavailable]
        {
            assert_eq!(QuestionAnswer::from_outcome(&answer.to_outcome()), Some(answer));
        }
        assert_eq!(QuestionAnswer::from_outcome(&json!({"action": "accept"})), None);
    }
}
