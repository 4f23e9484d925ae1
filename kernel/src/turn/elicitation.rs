//! An MCP server's question during a turn's call (`superpi_mcp_client::Asker`): its form put
//! to the person as `ask_question` puts questions (one `ui_request` of kind `question`, a
//! question per field), the answers given back by field name. Where nobody can answer, or the
//! form holds a field no question can ask (an object, a list of free values), the server is
//! told `decline` and the call goes on.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value, json};
use superpi_mcp_client::{Asker, Elicitation, Elicited};
use superpi_proto::question::{KIND, Question, QuestionOption, QuestionRequest};
use tokio_util::sync::CancellationToken;

use crate::conversation::Conversation;
use crate::kernel::Kernel;
use crate::turn::put_question::{Put, put};

/// Asks for one call of a turn.
pub(crate) struct TurnAsker {
    pub kernel: Arc<Kernel>,
    pub conv: Arc<Conversation>,
    pub turn_id: i64,
    pub call_id: String,
    pub cancel: CancellationToken,
}

impl TurnAsker {
    /// The asker of one call of a turn.
    pub fn of(
        kernel: &Arc<Kernel>,
        conv: &Arc<Conversation>,
        turn_id: i64,
        call_id: &str,
        cancel: &CancellationToken,
    ) -> Arc<dyn Asker> {
        let (kernel, conv, call_id, cancel) = (kernel.clone(), conv.clone(), call_id.to_string(), cancel.clone());
        Arc::new(TurnAsker { kernel, conv, turn_id, call_id, cancel })
    }
}

impl Asker for TurnAsker {
    fn ask(&self, question: Elicitation) -> Pin<Box<dyn Future<Output = Elicited> + Send + '_>> {
        Box::pin(async move {
            let Some((request, fields)) = request(&self.call_id, &question) else {
                tracing::info!(server = %question.server, "a form no question can ask is declined");
                return Elicited::Decline;
            };
            match put(&self.kernel, &self.conv, self.turn_id, request, &self.cancel).await {
                Put::Answered(answers) => Elicited::Accept(
                    fields.into_iter().filter_map(|(id, field)| Some((field, answers.get(&id)?.clone()))).collect(),
                ),
                Put::Dismissed | Put::Cancelled => Elicited::Cancel,
                Put::Declined(_) | Put::Refused(_) => Elicited::Decline,
            }
        })
    }
}

/// The questions of a server's form, with each question's id and its field's name; `None`
/// for a form with a field no question asks. A form of no fields asks to go on.
pub(crate) fn request(call_id: &str, asked: &Elicitation) -> Option<(QuestionRequest, Vec<(String, String)>)> {
    let empty = Map::new();
    let properties = asked.schema.get("properties").and_then(Value::as_object).unwrap_or(&empty);
    let mut questions = Vec::new();
    let mut fields = Vec::new();
    for (n, (field, property)) in properties.iter().enumerate() {
        let id = format!("f{n}");
        let title = property.get("title").and_then(Value::as_str).unwrap_or(field);
        let question = match property.get("description").and_then(Value::as_str) {
            Some(description) => format!("{title}: {description}"),
            None => title.to_string(),
        };
        let labels = |values: Option<&Value>| -> Option<Vec<String>> {
            values?.as_array()?.iter().map(|v| v.as_str().map(str::to_string)).collect()
        };
        let (options, multiple, schema) = match property.get("type").and_then(Value::as_str) {
            Some("string") if property.get("enum").is_some() => {
                let labels = labels(property.get("enum"))?;
                (labels.clone(), false, json!({"type": "string", "enum": labels}))
            }
            Some("array") => {
                let labels = labels(property.get("items").and_then(|i| i.get("enum")))?;
                (labels.clone(), true, json!({"type": "array", "items": {"type": "string", "enum": labels}}))
            }
            Some(ty @ ("string" | "number" | "integer" | "boolean")) => {
                let mut schema = json!({"type": ty});
                for key in ["minimum", "maximum", "minLength", "maxLength"] {
                    if let Some(value) = property.get(key) {
                        schema[key] = value.clone();
                    }
                }
                (Vec::new(), false, schema)
            }
            _ => return None,
        };
        let options = options.into_iter().map(|label| QuestionOption { label, description: None }).collect();
        questions.push(Question { id: id.clone(), question, options, multiple, schema });
        fields.push((id, field.clone()));
    }
    if questions.is_empty() {
        let options = vec![QuestionOption { label: "Go on".into(), description: None }];
        let schema = json!({"type": "string", "enum": ["Go on"]});
        questions.push(Question {
            id: "go_on".into(),
            question: asked.message.clone(),
            options,
            multiple: false,
            schema,
        });
    }
    let title = Some(format!("The MCP server `{}` asks: {}", asked.server, asked.message));
    Some((QuestionRequest { kind: KIND.into(), tool_call_id: call_id.into(), title, questions }, fields))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_form_becomes_questions_and_an_object_field_is_not_asked() {
        let asked = Elicitation {
            server: "deploy".into(),
            message: "Where to?".into(),
            schema: json!({"type": "object", "properties": {
                "region": {"type": "string", "enum": ["eu", "us"], "title": "Region"},
                "replicas": {"type": "integer", "minimum": 1, "description": "how many"},
                "notify": {"type": "boolean"}
            }, "required": ["region"]}),
        };
        let (asking, fields) = super::request("c1", &asked).unwrap();
        assert_eq!(asking.title.as_deref(), Some("The MCP server `deploy` asks: Where to?"));
        let by_field: Vec<(&str, &str, &Value)> = fields
            .iter()
            .zip(&asking.questions)
            .map(|((_, field), q)| (field.as_str(), q.question.as_str(), &q.schema))
            .collect();
        assert!(by_field.contains(&("region", "Region", &json!({"type": "string", "enum": ["eu", "us"]}))));
        assert!(by_field.contains(&("replicas", "replicas: how many", &json!({"type": "integer", "minimum": 1}))));
        assert!(by_field.contains(&("notify", "notify", &json!({"type": "boolean"}))));
        let nested = Elicitation { schema: json!({"properties": {"x": {"type": "object"}}}), ..asked.clone() };
        assert!(request_is_none(&nested));
        let confirm = Elicitation { schema: json!({"type": "object", "properties": {}}), ..asked };
        let (confirmed, fields) = super::request("c1", &confirm).unwrap();
        assert!(fields.is_empty() && confirmed.questions[0].id == "go_on");
    }

    fn request_is_none(asked: &Elicitation) -> bool {
        request("c", asked).is_none()
    }
}
