//! The C math functions the binary calls, defined here so that it does not load the C
//! library's `libm`.
//!
//! SQLite, QuickJS and Rust's own `f64` methods call `sin`, `pow`, `log` and the rest by
//! their C names. Taken from glibc's `libm.so`, the dynamic loader maps that library and
//! binds each of them at start-up (the binary is linked with `-z now`), running glibc's
//! per-CPU selectors, which brings about 0.5 MiB of it into every process — a server's
//! memory that no call of the benchmark's uses (docs/benchmarks.md). Defined in the
//! binary, the linker resolves them here and leaves `libm.so` out (`--as-needed`); the
//! implementations are the `libm` crate's (Rust ports of musl's, within an ulp of
//! glibc's), compiled in and touched only when called.
//!
//! The list is the binary's complete use of `libm.so`: a test fails when a dependency
//! starts calling one more function and the library is loaded again
//! (`cli::math_library_is_not_loaded` in the integration tests).

// Defining a C symbol is unsafe to Rust: nothing checks another definition does not clash.
// These are the C library's own names and signatures, and the binary defines them once.
#![allow(unsafe_code)]

use std::ffi::{c_double, c_int, c_long};

macro_rules! unary {
    ($($name:ident),* $(,)?) => {$(
        #[unsafe(no_mangle)]
        extern "C" fn $name(x: c_double) -> c_double {
            libm::$name(x)
        }
    )*};
}

unary!(
    acos, acosh, asin, asinh, atan, atanh, cos, cosh, exp, expm1, log, log10, log1p, log2, sin,
    sinh, tan, tanh,
);

#[unsafe(no_mangle)]
extern "C" fn atan2(y: c_double, x: c_double) -> c_double {
    libm::atan2(y, x)
}

#[unsafe(no_mangle)]
extern "C" fn hypot(x: c_double, y: c_double) -> c_double {
    libm::hypot(x, y)
}

#[unsafe(no_mangle)]
extern "C" fn pow(x: c_double, y: c_double) -> c_double {
    libm::pow(x, y)
}

#[unsafe(no_mangle)]
extern "C" fn scalbn(x: c_double, n: c_int) -> c_double {
    libm::scalbn(x, n)
}

/// Rounded to an integer in the default rounding mode (to nearest, ties to even), the only
/// one this program runs in. Out of range and NaN, C leaves the result unspecified; this
/// gives the nearest `long` and 0.
#[unsafe(no_mangle)]
extern "C" fn lrint(x: c_double) -> c_long {
    libm::rint(x) as c_long
}

/// # Safety
/// `exponent` is a valid pointer to write an `int` to, as C requires.
#[unsafe(no_mangle)]
unsafe extern "C" fn frexp(x: c_double, exponent: *mut c_int) -> c_double {
    let (mantissa, e) = libm::frexp(x);
    if !exponent.is_null() {
        // SAFETY: the caller passes a pointer to an int (C's contract for frexp).
        unsafe { exponent.write(e) };
    }
    mantissa
}

/// # Safety
/// `integral` is a valid pointer to write a `double` to, as C requires.
#[unsafe(no_mangle)]
unsafe extern "C" fn modf(x: c_double, integral: *mut c_double) -> c_double {
    let (fraction, whole) = libm::modf(x);
    if !integral.is_null() {
        // SAFETY: the caller passes a pointer to a double (C's contract for modf).
        unsafe { integral.write(whole) };
    }
    fraction
}

#[cfg(test)]
mod tests {
    /// The values C programs rely on, exactly: what glibc returns for them.
    #[test]
    fn the_functions_answer_as_the_c_library_does() {
        let close = |a: f64, b: f64| (a - b).abs() <= b.abs() * 4.0 * f64::EPSILON;
        assert_eq!(super::pow(2.0, 10.0), 1024.0);
        assert_eq!(super::pow(2.0, 0.5), std::f64::consts::SQRT_2);
        assert!(close(super::sin(1.0), 0.841_470_984_807_896_5));
        assert!(close(super::atan2(1.0, 1.0), std::f64::consts::FRAC_PI_4));
        assert_eq!(super::log10(1000.0), 3.0);
        assert_eq!(super::log2(8.0), 3.0);
        assert_eq!(super::exp(0.0), 1.0);
        assert_eq!(super::hypot(3.0, 4.0), 5.0);
        assert_eq!(super::lrint(2.5), 2);
        assert_eq!(super::lrint(3.5), 4);
        assert_eq!(super::lrint(-2.5), -2);
        let mut e = 0;
        // SAFETY: a pointer to a local int.
        assert_eq!(unsafe { super::frexp(48.0, &mut e) }, 0.75);
        assert_eq!(e, 6);
        let mut whole = 0.0;
        // SAFETY: a pointer to a local double.
        assert_eq!(unsafe { super::modf(-3.25, &mut whole) }, -0.25);
        assert_eq!(whole, -3.0);
        assert_eq!(super::scalbn(0.75, 6), 48.0);
    }
}
