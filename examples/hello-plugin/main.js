// The hello plugin: `activate` registers one action, which becomes the tool `hello_greet`
// (the last part of the plugin id, `hello`, then the action's name).
export function activate(context) {
  context.logger.info("activating", context.id);
  context.registerActions((t) => [
    {
      name: "greet",
      label: t("greet.label"),
      description:
        "Greet someone by name. Returns the greeting as text and as {greeting, language}.",
      properties: {
        name: { type: "string", description: "Who to greet.", required: true },
        language: {
          type: "string",
          description: "The language of the greeting.",
          enum: ["en", "zh"],
          default: "en",
        },
        times: {
          type: "integer",
          description: "How many times to say it (1 to 3).",
          default: 1,
        },
      },
      outputs: {
        greeting: { type: "string", required: true },
        language: { type: "string", required: true },
      },
      annotations: { readOnly: true, idempotent: true, openWorld: false },
      async run(inputs, ctx) {
        if (inputs.times < 1 || inputs.times > 3) {
          throw new Error(`times must be 1, 2 or 3, not ${inputs.times}`);
        }
        const hello = inputs.language === "zh" ? "你好" : "Hello";
        const one = `${hello}, ${inputs.name}${ctx.config.punctuation}`;
        const greeting = Array(inputs.times).fill(one).join(" ");
        ctx.logger.info("greeted", inputs.name);
        return { greeting, language: inputs.language };
      },
    },
  ]);
}
