// The module behind `run_code`: one action that runs a model's snippet as the body of an
// async function with two names in scope, `tools` and `console`. The snippet sees none of
// this module's variables (the Function constructor compiles in the global scope) and the
// global scope is plain ECMAScript: no network, no files, no timers.
export function activate(context) {
  context.registerActions([
    {
      name: "run",
      description: "Runs one snippet.",
      properties: {
        code: { type: "string", required: true },
        max_log_bytes: { type: "integer", required: true },
      },
      async run(inputs, ctx) {
        const logs = [];
        let logged = 0;
        let dropped = 0;
        const show = (value) => {
          if (typeof value === "string") return value;
          if (value instanceof Error) return `${value.name}: ${value.message}`;
          try {
            const json = JSON.stringify(value);
            return json === undefined ? String(value) : json;
          } catch {
            return String(value);
          }
        };
        const log = (...args) => {
          const line = args.map(show).join(" ");
          if (logged + line.length + 1 > inputs.max_log_bytes) {
            dropped += 1;
            return;
          }
          logged += line.length + 1;
          logs.push(line);
        };
        const console = Object.freeze({ log, info: log, warn: log, error: log, debug: log });
        const call = ctx.tools.call;
        const tool = (name) => async (args) => {
          if (name === "run_code") {
            const error = new Error("run_code cannot call itself: write the code inline");
            error.kind = "denied";
            error.tool = name;
            throw error;
          }
          let out;
          try {
            out = await call(name, args === undefined ? {} : args);
          } catch (e) {
            // The pipeline refused or the tool failed: `kind` says how (denied, not_found,
            // invalid_arguments, timeout, ...).
            const error = new Error(`${name}: ${e && e.message ? e.message : e}`);
            error.kind = (e && e.kind) || "failed";
            error.tool = name;
            throw error;
          }
          if (out.isError) {
            const error = new Error(`${name}: ${out.text}`);
            error.kind = "tool_error";
            error.tool = name;
            throw error;
          }
          // The text a model would read (a file's lines, grep's matches); a tool that
          // answers only with structured data gives that.
          return out.text !== "" ? out.text : out.structured;
        };
        const tools = new Proxy(Object.freeze({}), {
          // `then` stays undefined so that `await tools` is not taken for a promise.
          get: (_, name) => (typeof name === "string" && name !== "then" ? tool(name) : undefined),
        });
        const AsyncFunction = (async () => {}).constructor;
        let body;
        try {
          body = new AsyncFunction("tools", "console", inputs.code);
        } catch (e) {
          throw new SyntaxError(`the code does not parse: ${e.message}`);
        }
        const value = await body(tools, console);
        return { value: value === undefined ? null : value, logs, dropped };
      },
    },
  ]);
}
