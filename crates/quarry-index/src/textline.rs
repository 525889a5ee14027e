//! stub until the textline branch lands
pub fn text_line_event(line: &str, _now: i64) -> String {
    serde_json::json!({ "message": line }).to_string()
}
