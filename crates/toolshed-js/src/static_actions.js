// Agent Spaces' static declarations as actions, for a plugin whose activate() registers
// none: `workflow.js` (`{ nodes: [{ type, label, description, properties, handler(ctx,
// args) }] }`) and `tools.js` (`{ tools: [{ name, description, input_schema }],
// handler(name, args, api) }`). A node and a tool of one name are one action (the node's
// form wins). Shared by both runtimes; evaluated as one function expression.
(workflow, tools) => {
  const out = [];
  const nodes = workflow && Array.isArray(workflow.nodes) ? workflow.nodes : [];
  for (const node of nodes) {
    if (!node || typeof node !== "object" || typeof node.handler !== "function") continue;
    const action = {};
    for (const key of Object.keys(node)) {
      if (key !== "type" && key !== "handler") action[key] = node[key];
    }
    action.name = typeof node.name === "string" ? node.name : node.type;
    action.run = node.handler;
    out.push(action);
  }
  const list = tools && Array.isArray(tools.tools) ? tools.tools : [];
  const handler = tools && tools.handler;
  for (const tool of list) {
    if (!tool || typeof handler !== "function" || out.some((a) => a.name === tool.name)) continue;
    const schema = tool.input_schema || tool.inputSchema || tool.parameters || {};
    const required = Array.isArray(schema.required) ? schema.required : [];
    const properties = {};
    for (const key of Object.keys(schema.properties || {})) {
      const given = schema.properties[key] || {};
      let type = Array.isArray(given.type) ? given.type.find((t) => t !== "null") : given.type;
      if (!["string", "number", "integer", "boolean", "array", "object"].includes(type)) type = "string";
      const property = { type };
      if (typeof given.description === "string") property.description = given.description;
      if (given.default !== undefined) property.default = given.default;
      if (Array.isArray(given.enum)) property.enum = given.enum;
      if (type === "array" && given.items && typeof given.items.type === "string") property.items = { type: given.items.type };
      if (required.includes(key)) property.required = true;
      properties[key] = property;
    }
    const name = tool.name;
    out.push({
      name,
      description: tool.description || name,
      properties,
      run: (ctx, args) => handler(name, args, ctx.api),
    });
  }
  return out;
}
