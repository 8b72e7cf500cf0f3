import { Injectable } from '@nestjs/common';
import { SAVED_FILTERS_MAX, type Identity, type SavedFilter, type SavedFilterCreate } from '@th/contracts';
import { DomainError, ErrorCode, ValidationFailed, conflict, notFound } from '@th/platform';
import { FilterSyntaxError, parseFilter } from '@th/run-filter';
import { ProjectsRepository } from './projects.repository';
import { SavedFiltersRepository } from './saved-filters.repository';

/** Saved run filters of a project: per workspace and project, so everyone in the workspace sees the same views. */
@Injectable()
export class SavedFiltersService {
  constructor(
    private readonly projects: ProjectsRepository,
    private readonly repo: SavedFiltersRepository,
  ) {}

  async list(identity: Identity, sessionId: string): Promise<SavedFilter[]> {
    await this.project(identity, sessionId);
    return this.repo.list(identity, sessionId);
  }

  async create(identity: Identity, sessionId: string, body: SavedFilterCreate): Promise<SavedFilter> {
    await this.project(identity, sessionId);
    try {
      parseFilter(body.filter);
    } catch (err) {
      if (err instanceof FilterSyntaxError) throw new ValidationFailed([{ loc: ['body', 'filter'], msg: err.message, type: 'value_error', ctx: { position: err.position } }]);
      throw err;
    }
    const saved = await this.repo.insert(identity, sessionId, body.name, body.filter, SAVED_FILTERS_MAX);
    if (saved === 'full') throw new DomainError(ErrorCode.Conflict, `The project already has ${SAVED_FILTERS_MAX} saved filters`);
    if (!saved) throw conflict(`A saved filter named "${body.name}" already exists in this project`);
    return saved;
  }

  async delete(identity: Identity, sessionId: string, id: string): Promise<void> {
    await this.project(identity, sessionId);
    if (!(await this.repo.delete(identity, sessionId, id))) throw notFound(`Saved filter ${id}`);
  }

  private async project(identity: Identity, sessionId: string): Promise<void> {
    if (!(await this.projects.findById(identity, sessionId))) throw notFound(`Project ${sessionId}`);
  }
}
