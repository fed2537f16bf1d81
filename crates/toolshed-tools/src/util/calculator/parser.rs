//! A lexer and a precedence-climbing parser that evaluates as it parses.
//!
//! Grammar, loosest binding first:
//!
//! ```text
//! expression := term (("+" | "-") term)*
//! term       := unary (("*" | "/" | "%") unary)*
//! unary      := ("-" | "+") unary | power
//! power      := primary ("^" unary)?          right-associative; -2^2 = -(2^2)
//! primary    := number | constant | function "(" expression ("," expression)* ")"
//!             | "(" expression ")"
//! ```
//!
//! Left-associative chains are loops, not recursion, so `1+1+…+1` costs no stack; every
//! recursive path passes through `unary`, which counts depth against [`MAX_DEPTH`].
//!
//! Evaluation errors (division by zero, `sqrt(-1)`) are recorded and parsing continues, so
//! a syntax error anywhere in the expression is reported first: a model fixing its input
//! should hear about the typo before it hears about the arithmetic.

use toolshed_core::ToolError;

use super::number::format;

/// Longest expression accepted, in characters.
pub(crate) const MAX_EXPRESSION_CHARS: usize = 10_000;

/// Deepest nesting of parentheses, function calls, unary signs and powers.
pub(super) const MAX_DEPTH: usize = 256;

/// What an operand may be, for "expected …" messages.
const EXPECTED_OPERAND: &str = "expected a number, `(`, a function or a constant";

/// What may follow a complete operand at the top level.
const EXPECTED_OPERATOR: &str = "expected an operator (+ - * / % ^) or the end of the expression";

const FUNCTIONS: &str = "sqrt, abs, min, max, round, floor, ceil, ln, log10, sin, cos, tan";
const CONSTANTS: &str = "pi, e";

/// Evaluates `expression`, or explains the first thing wrong with it.
pub(super) fn evaluate(expression: &str) -> Result<f64, ToolError> {
    let length = expression.chars().count();
    if length > MAX_EXPRESSION_CHARS {
        return Err(ToolError::invalid(format!(
            "the expression is {length} characters long, over the limit of \
             {MAX_EXPRESSION_CHARS}; split the calculation into smaller steps"
        )));
    }
    let tokens = lex(expression);
    if tokens.len() == 1 {
        return Err(ToolError::invalid(
            "the expression is empty; write an arithmetic expression such as `2 + 3 * 4`",
        ));
    }
    let mut parser = Parser {
        tokens,
        index: 0,
        depth: 0,
        deferred: None,
    };
    let value = parser.expression()?;
    parser.finish()?;
    if let Some(error) = parser.deferred {
        return Err(error);
    }
    Ok(value)
}

#[derive(Debug, Clone, PartialEq)]
enum Kind {
    Number(f64),
    Ident(String),
    /// One of `+ - * / % ^`, normalised (`×` is `*`, `**` is `^`).
    Op(char),
    Open,
    Close,
    Comma,
    /// A character that starts no token.
    Invalid,
    End,
}

#[derive(Debug, Clone)]
struct Token {
    kind: Kind,
    /// 1-based character position of the token's first character.
    position: usize,
    /// The token as written, for messages.
    text: String,
}

impl Token {
    /// How the token reads in a message: "`*`", "character `&`", "end of expression".
    fn describe(&self) -> String {
        match self.kind {
            Kind::End => "end of expression".to_string(),
            Kind::Invalid => format!("character `{}`", self.text),
            _ => format!("`{}`", self.text),
        }
    }
}

fn lex(expression: &str) -> Vec<Token> {
    let chars: Vec<char> = expression.chars().collect();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let start = i;
        let next = chars.get(i + 1).copied();
        let kind = if c.is_whitespace() {
            i += 1;
            continue;
        } else if c.is_ascii_digit() || (c == '.' && next.is_some_and(|n| n.is_ascii_digit())) {
            i = scan_number(&chars, i);
            let text: String = chars[start..i].iter().collect();
            // The scanner only accepts what f64's parser accepts; a failure would be a bug,
            // and reads as an invalid token rather than a panic.
            text.parse::<f64>().map_or(Kind::Invalid, Kind::Number)
        } else if c.is_alphabetic() || c == '_' {
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                i += 1;
            }
            Kind::Ident(chars[start..i].iter().collect())
        } else {
            i += 1;
            match c {
                '*' if next == Some('*') => {
                    i += 1;
                    Kind::Op('^')
                }
                '+' | '-' | '*' | '/' | '%' | '^' => Kind::Op(c),
                '−' => Kind::Op('-'),
                '×' | '·' => Kind::Op('*'),
                '÷' => Kind::Op('/'),
                '(' => Kind::Open,
                ')' => Kind::Close,
                ',' => Kind::Comma,
                _ => Kind::Invalid,
            }
        };
        tokens.push(Token {
            kind,
            position: start + 1,
            text: chars[start..i].iter().collect(),
        });
    }
    tokens.push(Token {
        kind: Kind::End,
        position: chars.len() + 1,
        text: String::new(),
    });
    tokens
}

/// The index just past the number starting at `i`: digits, an optional fraction, and an
/// exponent only when `e` is followed by digits (so `2e` is `2` then the constant `e`).
fn scan_number(chars: &[char], mut i: usize) -> usize {
    let digits = |chars: &[char], mut i: usize| {
        while i < chars.len() && chars[i].is_ascii_digit() {
            i += 1;
        }
        i
    };
    i = digits(chars, i);
    if chars.get(i) == Some(&'.') {
        i = digits(chars, i + 1);
    }
    if matches!(chars.get(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(chars.get(j), Some('+' | '-')) {
            j += 1;
        }
        if chars.get(j).is_some_and(char::is_ascii_digit) {
            i = digits(chars, j);
        }
    }
    i
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Function {
    Sqrt,
    Abs,
    Min,
    Max,
    Round,
    Floor,
    Ceil,
    Ln,
    Log10,
    Sin,
    Cos,
    Tan,
}

impl Function {
    fn from_name(name: &str) -> Option<Self> {
        Some(match name {
            "sqrt" => Self::Sqrt,
            "abs" => Self::Abs,
            "min" => Self::Min,
            "max" => Self::Max,
            "round" => Self::Round,
            "floor" => Self::Floor,
            "ceil" => Self::Ceil,
            "ln" => Self::Ln,
            "log10" => Self::Log10,
            "sin" => Self::Sin,
            "cos" => Self::Cos,
            "tan" => Self::Tan,
            _ => return None,
        })
    }

    /// How many arguments the function takes, and how to call it, for arity errors.
    fn arity(self) -> (usize, usize, &'static str) {
        match self {
            Self::Min => (1, usize::MAX, "at least 1 argument: min(a, b, ...)"),
            Self::Max => (1, usize::MAX, "at least 1 argument: max(a, b, ...)"),
            Self::Round => (1, 2, "1 or 2 arguments: round(x) or round(x, digits)"),
            _ => (1, 1, "exactly 1 argument"),
        }
    }

    /// What the function needs of its argument, for "not a finite number" errors.
    fn domain(self) -> &'static str {
        match self {
            Self::Sqrt => "sqrt needs a value >= 0",
            Self::Ln => "ln needs a value > 0",
            Self::Log10 => "log10 needs a value > 0",
            _ => "the result is beyond ±1.8e308",
        }
    }
}

struct Parser {
    tokens: Vec<Token>,
    index: usize,
    depth: usize,
    /// The first evaluation error, reported only if the whole expression parses.
    deferred: Option<ToolError>,
}

impl Parser {
    fn peek(&self) -> &Token {
        // `lex` always ends with `End` and `advance` never moves past it.
        &self.tokens[self.index.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Token {
        let token = self.peek().clone();
        if token.kind != Kind::End {
            self.index += 1;
        }
        token
    }

    fn unexpected(token: &Token, expected: &str) -> ToolError {
        let hint = match token.kind {
            Kind::Number(_) | Kind::Ident(_) | Kind::Open if expected.contains("operator") => {
                "; write `*` to multiply"
            }
            _ => "",
        };
        ToolError::invalid(format!(
            "unexpected {} at position {}: {expected}{hint}",
            token.describe(),
            token.position
        ))
    }

    /// Records `error` unless an earlier evaluation error is already waiting.
    fn defer(&mut self, error: impl FnOnce() -> String) {
        if self.deferred.is_none() {
            self.deferred = Some(ToolError::invalid(error()));
        }
    }

    /// `value` if finite; otherwise records the error `describe` writes and carries on
    /// with NaN, which poisons the rest of the arithmetic but not the parse.
    fn finite(&mut self, value: f64, describe: impl FnOnce() -> String) -> f64 {
        if !value.is_finite() {
            self.defer(describe);
        }
        value
    }

    /// Whether an operand is already the product of an earlier error; such values produce
    /// no second error message.
    fn poisoned(&self, operands: &[f64]) -> bool {
        self.deferred.is_some() && operands.iter().any(|v| !v.is_finite())
    }

    fn finish(&mut self) -> Result<(), ToolError> {
        let token = self.peek().clone();
        match token.kind {
            Kind::End => Ok(()),
            Kind::Close => Err(ToolError::invalid(format!(
                "unmatched `)` at position {}: there is no `(` for it to close; remove it or \
                 add a `(` earlier",
                token.position
            ))),
            _ => Err(Self::unexpected(&token, EXPECTED_OPERATOR)),
        }
    }

    fn expression(&mut self) -> Result<f64, ToolError> {
        let mut acc = self.term()?;
        loop {
            let op = self.peek().clone();
            let Kind::Op(symbol @ ('+' | '-')) = op.kind else {
                return Ok(acc);
            };
            self.advance();
            let rhs = self.term()?;
            let value = if symbol == '+' { acc + rhs } else { acc - rhs };
            acc = self.binary_result(value, acc, symbol, rhs, op.position);
        }
    }

    fn term(&mut self) -> Result<f64, ToolError> {
        let mut acc = self.unary()?;
        loop {
            let op = self.peek().clone();
            let Kind::Op(symbol @ ('*' | '/' | '%')) = op.kind else {
                return Ok(acc);
            };
            self.advance();
            let rhs = self.unary()?;
            let position = op.position;
            acc = match symbol {
                '/' | '%' if rhs == 0.0 => {
                    let name = if symbol == '/' { "division" } else { "modulo" };
                    self.defer(|| {
                        format!(
                            "{name} by zero at position {position}: the right-hand side of \
                             `{} {symbol} {}` is 0; change the divisor",
                            operand(acc),
                            operand(rhs)
                        )
                    });
                    f64::NAN
                }
                '*' => self.binary_result(acc * rhs, acc, symbol, rhs, position),
                '/' => self.binary_result(acc / rhs, acc, symbol, rhs, position),
                _ => self.binary_result(acc % rhs, acc, symbol, rhs, position),
            };
        }
    }

    fn binary_result(&mut self, value: f64, lhs: f64, symbol: char, rhs: f64, at: usize) -> f64 {
        if self.poisoned(&[lhs, rhs]) {
            return f64::NAN;
        }
        self.finite(value, || {
            format!(
                "`{} {symbol} {}` at position {at} overflows: the result is beyond ±1.8e308",
                operand(lhs),
                operand(rhs)
            )
        })
    }

    fn unary(&mut self) -> Result<f64, ToolError> {
        let token = self.peek().clone();
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(ToolError::invalid(format!(
                "the expression nests deeper than {MAX_DEPTH} levels at position {}; \
                 simplify it or compute it in steps",
                token.position
            )));
        }
        let value = match token.kind {
            Kind::Op('-') => {
                self.advance();
                self.unary().map(|v| -v)
            }
            Kind::Op('+') => {
                self.advance();
                self.unary()
            }
            _ => self.power(),
        };
        self.depth -= 1;
        value
    }

    fn power(&mut self) -> Result<f64, ToolError> {
        let base = self.primary()?;
        let op = self.peek().clone();
        if op.kind != Kind::Op('^') {
            return Ok(base);
        }
        self.advance();
        let exponent = self.unary()?;
        if self.poisoned(&[base, exponent]) {
            return Ok(f64::NAN);
        }
        let value = base.powf(exponent);
        let at = op.position;
        Ok(self.finite(value, || {
            let written = format!("`{}^{}` at position {at}", operand(base), operand(exponent));
            if value.is_nan() {
                format!("{written} is not a real number: a negative base needs an integer exponent")
            } else if base == 0.0 {
                format!("{written} is undefined: 0 cannot be raised to a negative power")
            } else {
                format!("{written} overflows: the result is beyond ±1.8e308")
            }
        }))
    }

    fn primary(&mut self) -> Result<f64, ToolError> {
        let token = self.advance();
        match &token.kind {
            Kind::Number(value) => {
                if value.is_finite() {
                    Ok(*value)
                } else {
                    Err(ToolError::invalid(format!(
                        "the number `{}` at position {} is too large: numbers must be within \
                         ±1.8e308",
                        token.text, token.position
                    )))
                }
            }
            Kind::Open => {
                let value = self.expression()?;
                self.close(&token, "an operator or `)`")?;
                Ok(value)
            }
            Kind::Ident(name) => self.identifier(name, &token),
            _ => Err(Self::unexpected(&token, EXPECTED_OPERAND)),
        }
    }

    /// Consumes the `)` that closes `open`, or explains what is there instead.
    fn close(&mut self, open: &Token, expected: &str) -> Result<(), ToolError> {
        let token = self.peek().clone();
        match token.kind {
            Kind::Close => {
                self.advance();
                Ok(())
            }
            Kind::End => Err(ToolError::invalid(format!(
                "unclosed `(` at position {}: expected `)` before the end of the expression",
                open.position
            ))),
            _ => Err(Self::unexpected(&token, &format!("expected {expected}"))),
        }
    }

    fn identifier(&mut self, written: &str, token: &Token) -> Result<f64, ToolError> {
        let name = written.to_lowercase();
        let at = token.position;
        let constant = match name.as_str() {
            "pi" | "π" => Some(std::f64::consts::PI),
            "e" => Some(std::f64::consts::E),
            _ => None,
        };
        if let Some(value) = constant {
            if self.peek().kind == Kind::Open {
                return Err(ToolError::invalid(format!(
                    "`{written}` at position {at} is a constant, not a function; remove the \
                     parentheses after it, or write `*` to multiply"
                )));
            }
            return Ok(value);
        }
        let Some(function) = Function::from_name(&name) else {
            return Err(ToolError::invalid(format!(
                "unknown name `{written}` at position {at}: valid functions are {FUNCTIONS}; \
                 constants are {CONSTANTS}"
            )));
        };
        let open = self.peek().clone();
        if open.kind != Kind::Open {
            return Err(ToolError::invalid(format!(
                "function `{name}` at position {at} needs its arguments in parentheses, e.g. \
                 `{name}(2)`; found {} at position {}",
                open.describe(),
                open.position
            )));
        }
        self.advance();
        let mut args = Vec::new();
        if self.peek().kind != Kind::Close {
            loop {
                args.push(self.expression()?);
                if self.peek().kind == Kind::Comma {
                    self.advance();
                    continue;
                }
                self.close(&open, "`,` or `)`")?;
                break;
            }
        } else {
            self.advance();
        }
        let (least, most, usage) = function.arity();
        if args.len() < least || args.len() > most {
            let plural = if args.len() == 1 { "" } else { "s" };
            return Err(ToolError::invalid(format!(
                "function `{name}` at position {at} takes {usage}; it was given {} argument{plural}",
                args.len()
            )));
        }
        Ok(self.apply(function, &name, &args, at))
    }

    fn apply(&mut self, function: Function, name: &str, args: &[f64], at: usize) -> f64 {
        if self.poisoned(args) {
            return f64::NAN;
        }
        let x = args.first().copied().unwrap_or(f64::NAN);
        let value = match function {
            Function::Sqrt => x.sqrt(),
            Function::Abs => x.abs(),
            Function::Min => args.iter().copied().fold(f64::INFINITY, f64::min),
            Function::Max => args.iter().copied().fold(f64::NEG_INFINITY, f64::max),
            Function::Round => match args.get(1) {
                None => x.round(),
                Some(&digits) => return self.round_to(x, digits, at),
            },
            Function::Floor => x.floor(),
            Function::Ceil => x.ceil(),
            Function::Ln => x.ln(),
            Function::Log10 => x.log10(),
            Function::Sin => x.sin(),
            Function::Cos => x.cos(),
            Function::Tan => x.tan(),
        };
        self.finite(value, || {
            let list: Vec<String> = args.iter().map(|v| format(*v)).collect();
            let what = if value.is_nan() {
                "is not a real number"
            } else {
                "is not finite"
            };
            format!(
                "`{name}({})` at position {at} {what}: {}",
                list.join(", "),
                function.domain()
            )
        })
    }

    fn round_to(&mut self, x: f64, digits: f64, at: usize) -> f64 {
        if digits.fract() != 0.0 || !(-15.0..=15.0).contains(&digits) {
            self.defer(|| {
                format!(
                    "`round` at position {at} takes a whole number of digits from -15 to 15 as \
                     its second argument; it was given {}",
                    format(digits)
                )
            });
            return f64::NAN;
        }
        // `digits` is a whole number in -15..=15, so the cast is exact, and so is every
        // power of ten used: scaling by an exact 10^k keeps round(1234, -2) at 1200.
        let scale = 10f64.powi(digits.abs() as i32);
        let scaled = if digits >= 0.0 {
            (x * scale).round() / scale
        } else {
            (x / scale).round() * scale
        };
        // A value too large to scale has no digits at that position to round away.
        if scaled.is_finite() { scaled } else { x }
    }
}

/// A number as it would be written as an operand: negative values in parentheses.
fn operand(value: f64) -> String {
    let text = format(value);
    if value < 0.0 {
        format!("({text})")
    } else {
        text
    }
}
