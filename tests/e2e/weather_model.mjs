// The scripted model the JavaScript agents of the e2e tests run on (tests/e2e/node,
// tests/e2e/mastra/v1): gpt-4.1-mini as the AI SDK's MockLanguageModelV3, which each caller
// passes from its own packages; `usage` makes V3 token counts. The model's first call asks for
// the weather tool (1,000 tokens in, 50 out), the next answers in text (1,200 in, 30 out); the
// tests check those counts and their price.
export const usage = (input, output) => ({
  inputTokens: { total: input, noCache: input, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: output, text: output, reasoning: undefined },
});

export function weatherModel(MockLanguageModelV3) {
  let step = 0;
  return new MockLanguageModelV3({
    provider: "openai.chat",
    modelId: "gpt-4.1-mini",
    doGenerate: async () => (step++ === 0
      ? { content: [{ type: "tool-call", toolCallId: "call-1", toolName: "weather",
                      input: JSON.stringify({ city: "Lisbon" }) }],
          finishReason: { unified: "tool-calls", raw: "tool_calls" }, usage: usage(1000, 50),
          warnings: [] }
      : { content: [{ type: "text", text: "Sunny in Lisbon, 24 degrees." }],
          finishReason: { unified: "stop", raw: "stop" }, usage: usage(1200, 30), warnings: [] }),
  });
}
