// Two AI SDK runs with the real `ai` package, telemetry on, exported with the real
// OpenTelemetry Node SDK to Bench: generateText with a tool (its mock model answers a tool call,
// then text) and streamText, both turns of one session (the telemetry metadata's sessionId and
// userId). Usage: node agent.mjs <proto|json> (endpoint and headers from the standard
// OTEL_EXPORTER_OTLP_* environment variables).
import { generateText, simulateReadableStream, stepCountIs, streamText, tool } from "ai";
import { MockLanguageModelV3 } from "ai/test";
import { usage, weatherModel } from "../weather_model.mjs";
import { z } from "zod";
import { NodeTracerProvider, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-node";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { OTLPTraceExporter as ProtoExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";

const Exporter = process.argv[2] === "json" ? JsonExporter : ProtoExporter;
const provider = new NodeTracerProvider({
  resource: resourceFromAttributes({ "service.name": "weather-agent" }),
  spanProcessors: [new SimpleSpanProcessor(new Exporter())],
});
provider.register();

const model = weatherModel(MockLanguageModelV3);

const result = await generateText({
  model,
  prompt: "What is the weather in Lisbon?",
  tools: { weather: tool({ description: "Weather in a city", inputSchema: z.object({ city: z.string() }),
                           execute: async ({ city }) => ({ city, celsius: 24, sky: "sunny" }) }) },
  stopWhen: stepCountIs(3),
  experimental_telemetry: { isEnabled: true, functionId: "weather-agent",
                            metadata: { sessionId: "weather-chat", userId: "traveller-7" } },
});
const streamed = streamText({
  model: new MockLanguageModelV3({
    provider: "openai.chat",
    modelId: "gpt-4.1-mini",
    doStream: async () => ({ stream: simulateReadableStream({ chunks: [
      { type: "text-start", id: "t1" },
      { type: "text-delta", id: "t1", delta: "Pack " },
      { type: "text-delta", id: "t1", delta: "sunscreen." },
      { type: "text-end", id: "t1" },
      { type: "finish", finishReason: { unified: "stop", raw: "stop" }, usage: usage(400, 10) },
    ] }) }),
  }),
  prompt: "What should I pack?",
  experimental_telemetry: { isEnabled: true, functionId: "weather-agent",
                            metadata: { sessionId: "weather-chat", userId: "traveller-7" } },
});
for await (const _ of streamed.textStream) { /* consume the stream */ }
await provider.forceFlush();
await provider.shutdown();
console.log(result.text, await streamed.text);
