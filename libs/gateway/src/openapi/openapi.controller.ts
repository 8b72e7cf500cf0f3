import { Controller, Get } from '@nestjs/common';
import { Public } from '@th/auth';
import { OPENAPI_DOCUMENT_VERSION, buildOpenApiDocument } from './openapi.document';

@Controller()
export class OpenApiController {
  /** The committed document, byte for byte: its version is the API document's, not the release's (/info reports that). */
  private readonly doc = buildOpenApiDocument(OPENAPI_DOCUMENT_VERSION);

  @Get('openapi.json')
  @Public()
  document(): Record<string, unknown> {
    return this.doc;
  }
}
