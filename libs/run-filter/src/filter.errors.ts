/**
 * Raised for any filter the service refuses: malformed syntax, unknown comparator or field,
 * wrong arity, a value of the wrong type, or input over the length/nesting bounds.
 * The HTTP layer maps it to 422 with loc ['body', <filter param>] and `message` as msg.
 */
export class FilterSyntaxError extends Error {
  override readonly name = 'FilterSyntaxError';

  /** The problem without the position suffix, e.g. "expected ',' but found ')'". */
  readonly detail: string;

  /** 0-based character offset into the filter string where the problem was detected. */
  readonly position: number;

  constructor(detail: string, position: number) {
    super(`${detail} at position ${position}`);
    this.detail = detail;
    this.position = position;
    Object.setPrototypeOf(this, new.target.prototype);
  }
}
