use serde_json::{Value, json};
use toolshed_core::{ErrorKind, ToolError, ToolOutput};

use super::parser::{MAX_DEPTH, MAX_EXPRESSION_CHARS};
use super::plugin;
use crate::util::test_support;

async fn call(args: Value) -> Result<ToolOutput, ToolError> {
    test_support::call(&plugin(), args).await
}

/// The printed result of `expression`.
async fn calc(expression: &str) -> String {
    test_support::ok(&plugin(), json!({ "expression": expression }))
        .await
        .text_joined()
}

/// The message of the invalid-arguments error `expression` must produce.
async fn calc_err(expression: &str) -> String {
    test_support::invalid(&plugin(), json!({ "expression": expression })).await
}

#[tokio::test]
async fn plugin_has_one_pure_tool_named_calculator() {
    let p = plugin();
    assert_eq!(p.manifest().id, "system.calculator");
    let tools = p.tools();
    assert_eq!(tools.len(), 1);
    let spec = tools[0].spec();
    assert_eq!(spec.name, "calculator");
    assert_eq!(spec.group, "util");
    assert_eq!(spec.annotations, toolshed_core::ToolAnnotations::PURE);
}

#[tokio::test]
async fn returns_text_and_structured_result() {
    let out = call(json!({"expression": "2+3*4"})).await.unwrap();
    assert_eq!(out.text_joined(), "14");
    assert_eq!(
        out.structured,
        Some(json!({"expression": "2+3*4", "result": 14}))
    );
    let out = call(json!({"expression": "0.1+0.2"})).await.unwrap();
    assert_eq!(out.text_joined(), "0.3");
    assert_eq!(out.structured.unwrap()["result"], json!(0.3));
}

#[tokio::test]
async fn precedence_and_associativity() {
    assert_eq!(calc("2+3*4").await, "14");
    assert_eq!(calc("(2+3)*4").await, "20");
    assert_eq!(calc("10-4-3").await, "3");
    assert_eq!(calc("100/10/5").await, "2");
    assert_eq!(calc("2^3^2").await, "512");
    assert_eq!(calc("-2^2").await, "-4");
    assert_eq!(calc("(-2)^2").await, "4");
    assert_eq!(calc("2^-1").await, "0.5");
    assert_eq!(calc("--3").await, "3");
    assert_eq!(calc("+-+3").await, "-3");
    assert_eq!(calc("-3*-2").await, "6");
    assert_eq!(calc("7 % 3").await, "1");
    assert_eq!(calc("-7 % 3").await, "-1");
    assert_eq!(calc("5.5 % 2").await, "1.5");
    assert_eq!(calc("2 ** 10").await, "1024");
    assert_eq!(calc("6 × 7 ÷ 2 − 1").await, "20");
}

#[tokio::test]
async fn numbers_and_whitespace() {
    assert_eq!(calc("1e3").await, "1000");
    assert_eq!(calc("1.5E-3").await, "0.0015");
    assert_eq!(calc("2e+2").await, "200");
    assert_eq!(calc(".5 + 1.").await, "1.5");
    assert_eq!(calc("  \t1 +\n 2  ").await, "3");
    assert_eq!(calc("1/3").await, "0.333333333333333");
    assert_eq!(calc("1e20").await, "1e20");
    assert_eq!(calc("1/1e9").await, "1e-9");
    assert_eq!(calc("2^53 + 1").await, "9007199254740992");
}

#[tokio::test]
async fn functions_and_constants() {
    assert_eq!(calc("sqrt(16)").await, "4");
    assert_eq!(calc("abs(-2.5)").await, "2.5");
    assert_eq!(calc("min(3, 1, 2)").await, "1");
    assert_eq!(calc("max(3)").await, "3");
    assert_eq!(calc("max(-1, -5, 2*3)").await, "6");
    assert_eq!(calc("round(2.5)").await, "3");
    assert_eq!(calc("round(-2.5)").await, "-3");
    assert_eq!(calc("round(pi, 2)").await, "3.14");
    assert_eq!(calc("round(1234.5, -2)").await, "1200");
    assert_eq!(calc("round(1e300, 15)").await, "1e300");
    assert_eq!(calc("floor(-1.5)").await, "-2");
    assert_eq!(calc("ceil(1.2)").await, "2");
    assert_eq!(calc("ln(e)").await, "1");
    assert_eq!(calc("log10(1000)").await, "3");
    assert_eq!(calc("sin(0)").await, "0");
    assert_eq!(calc("cos(pi)").await, "-1");
    assert_eq!(calc("tan(pi/4)").await, "1");
    assert_eq!(calc("sin(pi)").await, "1.22464679914735e-16");
    assert_eq!(calc("pi").await, "3.14159265358979");
    assert_eq!(calc("2*PI").await, "6.28318530717959");
    assert_eq!(calc("e").await, "2.71828182845905");
    assert_eq!(calc("SQRT(sqrt(81))").await, "3");
}

#[tokio::test]
async fn syntax_errors_name_position_and_expectation() {
    assert_eq!(
        calc_err("2+*3").await,
        "unexpected `*` at position 3: expected a number, `(`, a function or a constant"
    );
    let msg = calc_err("2+").await;
    assert!(
        msg.contains("unexpected end of expression at position 3"),
        "{msg}"
    );
    let msg = calc_err("2 3").await;
    assert!(msg.contains("unexpected `3` at position 3"), "{msg}");
    assert!(msg.contains("write `*` to multiply"), "{msg}");
    let msg = calc_err("2pi").await;
    assert!(msg.contains("unexpected `pi` at position 2"), "{msg}");
    let msg = calc_err("2 & 3").await;
    assert!(
        msg.contains("unexpected character `&` at position 3"),
        "{msg}"
    );
    let msg = calc_err("1.2.3").await;
    assert!(msg.contains("unexpected `.3` at position 4"), "{msg}");
    let msg = calc_err("()").await;
    assert!(msg.contains("unexpected `)` at position 2"), "{msg}");
    let msg = calc_err(",1").await;
    assert!(msg.contains("unexpected `,` at position 1"), "{msg}");
    let msg = calc_err("   ").await;
    assert!(msg.contains("the expression is empty"), "{msg}");
    let msg = calc_err("").await;
    assert!(msg.contains("the expression is empty"), "{msg}");
}

#[tokio::test]
async fn unbalanced_parentheses_point_at_the_culprit() {
    let msg = calc_err("(1+2").await;
    assert!(msg.contains("unclosed `(` at position 1"), "{msg}");
    let msg = calc_err("((1+2)").await;
    assert!(msg.contains("unclosed `(` at position 1"), "{msg}");
    let msg = calc_err("1+2)").await;
    assert!(msg.contains("unmatched `)` at position 4"), "{msg}");
    let msg = calc_err("sqrt(4").await;
    assert!(msg.contains("unclosed `(` at position 5"), "{msg}");
    let msg = calc_err("(1 2)").await;
    assert!(
        msg.contains("unexpected `2` at position 4: expected an operator or `)`"),
        "{msg}"
    );
}

#[tokio::test]
async fn names_and_arity_are_checked() {
    let msg = calc_err("foo(2)").await;
    assert!(msg.contains("unknown name `foo` at position 1"), "{msg}");
    assert!(msg.contains("sqrt, abs, min, max, round"), "{msg}");
    assert!(msg.contains("constants are pi, e"), "{msg}");
    let msg = calc_err("1 + log(10)").await;
    assert!(msg.contains("unknown name `log` at position 5"), "{msg}");
    let msg = calc_err("sqrt(1, 2)").await;
    assert!(
        msg.contains("function `sqrt` at position 1 takes exactly 1 argument"),
        "{msg}"
    );
    assert!(msg.contains("given 2 arguments"), "{msg}");
    let msg = calc_err("min()").await;
    assert!(
        msg.contains("function `min` at position 1 takes at least 1 argument"),
        "{msg}"
    );
    let msg = calc_err("round(1, 2, 3)").await;
    assert!(
        msg.contains("`round` at position 1 takes 1 or 2 arguments"),
        "{msg}"
    );
    let msg = calc_err("round(1, 2.5)").await;
    assert!(
        msg.contains("whole number of digits from -15 to 15"),
        "{msg}"
    );
    let msg = calc_err("sqrt 4").await;
    assert!(
        msg.contains("function `sqrt` at position 1 needs its arguments in parentheses"),
        "{msg}"
    );
    let msg = calc_err("pi(2)").await;
    assert!(
        msg.contains("`pi` at position 1 is a constant, not a function"),
        "{msg}"
    );
    let msg = calc_err("max(1 2)").await;
    assert!(
        msg.contains("unexpected `2` at position 7: expected `,` or `)`"),
        "{msg}"
    );
}

#[tokio::test]
async fn arithmetic_faults_are_errors_naming_the_operation() {
    assert_eq!(
        calc_err("1/0").await,
        "division by zero at position 2: the right-hand side of `1 / 0` is 0; change the divisor"
    );
    let msg = calc_err("5 % (2-2)").await;
    assert!(msg.starts_with("modulo by zero at position 3"), "{msg}");
    let msg = calc_err("sqrt(-1)").await;
    assert!(
        msg.contains("`sqrt(-1)` at position 1 is not a real number"),
        "{msg}"
    );
    assert!(msg.contains(">= 0"), "{msg}");
    let msg = calc_err("ln(0)").await;
    assert!(
        msg.contains("`ln(0)` at position 1 is not finite: ln needs a value > 0"),
        "{msg}"
    );
    let msg = calc_err("log10(-5)").await;
    assert!(msg.contains("`log10(-5)`"), "{msg}");
    let msg = calc_err("10^400").await;
    assert!(msg.contains("`10^400` at position 3 overflows"), "{msg}");
    let msg = calc_err("(-8)^(1/3)").await;
    assert!(
        msg.contains("`(-8)^0.333333333333333` at position 5 is not a real number"),
        "{msg}"
    );
    let msg = calc_err("0^-1").await;
    assert!(
        msg.contains("0 cannot be raised to a negative power"),
        "{msg}"
    );
    let msg = calc_err("1e308 * 10").await;
    assert!(
        msg.contains("`1e308 * 10` at position 7 overflows"),
        "{msg}"
    );
    let msg = calc_err("1e400").await;
    assert!(
        msg.contains("the number `1e400` at position 1 is too large"),
        "{msg}"
    );
}

#[tokio::test]
async fn the_first_arithmetic_fault_is_reported_once_and_syntax_wins() {
    // The NaN from 1/0 flows into sqrt and ^ without producing their own errors.
    let msg = calc_err("sqrt(1/0) + 2^(1/0)").await;
    assert!(msg.starts_with("division by zero at position 7"), "{msg}");
    // A syntax error later in the expression is reported before the division by zero.
    let msg = calc_err("1/0 + * 2").await;
    assert!(msg.contains("unexpected `*` at position 7"), "{msg}");
}

#[tokio::test]
async fn length_and_depth_are_capped() {
    let long = "1+".repeat(MAX_EXPRESSION_CHARS / 2) + "1";
    let msg = calc_err(&long).await;
    assert!(msg.contains("10001 characters long"), "{msg}");
    assert!(msg.contains("limit of 10000"), "{msg}");

    // Exactly at the depth limit still evaluates, one more level is refused.
    let at_limit = format!(
        "{}1{}",
        "(".repeat(MAX_DEPTH - 1),
        ")".repeat(MAX_DEPTH - 1)
    );
    assert_eq!(calc(&at_limit).await, "1");
    let too_deep = format!("{}1{}", "(".repeat(MAX_DEPTH), ")".repeat(MAX_DEPTH));
    let msg = calc_err(&too_deep).await;
    assert!(msg.contains("nests deeper than 256 levels"), "{msg}");
    let minus = format!("{}1", "-".repeat(5000));
    let msg = calc_err(&minus).await;
    assert!(msg.contains("nests deeper than 256 levels"), "{msg}");
    let towers = format!("2{}", "^2".repeat(4000));
    let msg = calc_err(&towers).await;
    assert!(msg.contains("nests deeper than 256 levels"), "{msg}");

    // Long flat chains are loops, not recursion.
    let flat = "1+".repeat(4999) + "1";
    assert_eq!(calc(&flat).await, "5000");
}

#[tokio::test]
async fn unknown_arguments_are_rejected() {
    let err = call(json!({"expression": "1", "precision": 3}))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArguments);
    assert!(err.to_string().contains("precision"), "{err}");
    let err = call(json!({})).await.unwrap_err();
    assert!(err.to_string().contains("expression"), "{err}");
}

#[test]
fn input_schema_compiles_and_validates() {
    test_support::check_schema(
        &plugin(),
        &[json!({"expression": "1+1"})],
        &[
            json!({"expression": 2}),
            json!({}),
            json!({"expression": "1", "extra": true}),
        ],
    );
}

#[tokio::test]
async fn deep_function_nesting_fits_on_the_stack() {
    let depth = MAX_DEPTH - 1;
    let nested = format!(
        "{}-1{}",
        "max(0, abs(".repeat(depth / 2),
        "))".repeat(depth / 2)
    );
    assert_eq!(calc(&nested).await, "1");
    let nested = format!("{}-1{}", "max(0, abs(".repeat(depth), "))".repeat(depth));
    let msg = calc_err(&nested).await;
    assert!(msg.contains("nests deeper than 256 levels"), "{msg}");
}
