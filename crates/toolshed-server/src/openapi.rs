pub const ROUTES: &[(&str, &str)] = &[];
pub async fn serve() -> axum::Json<serde_json::Value> {
    axum::Json(serde_json::json!({}))
}
