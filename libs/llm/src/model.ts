import { isObj } from './format';

export interface ResolvedModel {
  provider: string | null;
  model: string | null;
}

const str = (v: unknown): string | null => (typeof v === 'string' && v.trim() !== '' ? v : null);

/**
 * Provider and model of an LLM run. Metadata keys: the spec's neutral svc_provider/svc_model_name and
 * the published ls_provider/ls_model_name. Without a model-name key: inputs.model, then inputs.model_name
 * (then the invocation parameters LangChain records in extra).
 */
export function resolveModel(metadata: unknown, inputs: unknown, extra?: unknown): ResolvedModel {
  const meta = isObj(metadata) ? metadata : {};
  const ins = isObj(inputs) ? inputs : {};
  const invocation = isObj(extra) && isObj(extra.invocation_params) ? extra.invocation_params : {};
  const provider = str(meta.svc_provider) ?? str(meta.ls_provider);
  const model =
    str(meta.svc_model_name) ?? str(meta.ls_model_name) ?? str(ins.model) ?? str(ins.model_name) ?? str(invocation.model) ?? str(invocation.model_name);
  return { provider, model };
}
