export * from './query.module';
export * from './projects/projects.service';
export * from './projects/project.entity';
export * from './runs/runs.service';
export { Projects1732250000000 } from './migrations/1732250000000-projects';
import { ProjectEntity } from './projects/project.entity';
import { Projects1732250000000 } from './migrations/1732250000000-projects';
export const QUERY_ENTITIES = [ProjectEntity];
export const QUERY_MIGRATIONS = [Projects1732250000000];
