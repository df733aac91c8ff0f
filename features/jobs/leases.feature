Feature: Workers render an order's copies under a lease
  A worker holds a job only while its lease runs. A worker that went silent
  (a zombie) can no longer change the job once its lease ran out; another worker
  takes over and renders only what is missing, with the same effects.

  Background:
    Given the price list:
      | copies | coins per copy |
      | 1      | 5              |
      | 5      | 4              |
      | 10     | 3              |
    And the user holds 50 coins
    And the user has ordered 5 copies

  Scenario: A zombie's copy is refused after another worker took the job
    Given worker "A" has taken the job
    When worker "A" goes silent until its lease runs out
    And worker "B" takes the job
    And worker "A" reports copy 3 as rendered
    Then worker "A" is refused because it no longer holds the job
    And 1 refused write has been counted
    And copy 3 has not been recorded
    And the user has not been sent copy 3
    When worker "B" reports copy 3 as rendered
    Then copy 3 is recorded as rendered by worker "B"

  Scenario: A worker whose lease ran out is refused even before anyone took over
    Given worker "A" has taken the job
    When worker "A" goes silent until its lease runs out
    And worker "A" reports copy 1 as rendered
    Then worker "A" is refused because it no longer holds the job
    And 1 refused write has been counted
    And copy 1 has not been recorded

  Scenario: A worker that keeps renewing its lease keeps the job
    Given worker "A" has taken the job
    When 20 seconds pass
    And worker "A" checks in
    And 20 seconds pass
    And worker "B" takes the job
    Then worker "B" gets no job
    When worker "A" reports copy 1 as rendered
    Then copy 1 is recorded as rendered by worker "A"

  Scenario: A resumed job renders only the missing copies, with the same effects
    Given worker "A" has taken the job
    And worker "A" has rendered copies 1 and 2
    When worker "A" goes silent until its lease runs out
    And worker "B" takes the job
    Then worker "B" is given copies 3, 4 and 5 only
    And worker "B" is given the same effects for those copies as worker "A" was

  Scenario: A worker that takes over keeps its copies apart from the copies made before it
    Given worker "A" has taken the job
    And worker "A" has rendered copies 1 and 2
    When worker "A" goes silent until its lease runs out
    And worker "B" takes the job
    Then worker "B" is shown how copies 1 and 2 look, to keep its own copies apart from them

  Scenario: A job whose every attempt runs out fails the order and returns what was not delivered
    Given worker "A" has taken the job
    And worker "A" has rendered copy 1
    And the user has received copy 1
    When worker "A" goes silent until its lease runs out
    And worker "B" takes the job
    And worker "B" goes silent until its lease runs out
    And worker "C" takes the job
    And worker "C" goes silent until its lease runs out
    And the stalled-job sweep runs
    Then the order has failed
    And the user is told the order failed: 4 coins charged and 16 returned
    And the user's coins are:
      | available | set aside | spent | expired |
      | 46        | 0         | 4     | 0       |
    When worker "D" takes the job
    Then worker "D" gets no job

  Scenario Outline: Every write of a worker that lost the job is refused and counted
    Given worker "A" has taken the job
    When worker "A" goes silent until its lease runs out
    And worker "B" takes the job
    And worker "A" <writes>
    Then worker "A" is refused because it no longer holds the job
    And 1 refused write has been counted
    And the order is running
    And the user's coins are:
      | available | set aside | spent | expired |
      | 30        | 20        | 0     | 0       |

    Examples:
      | writes                                                        |
      | checks in                                                     |
      | reports copy 2 as rendered                                    |
      | reports the job finished with receipt "zombie-1"              |
      | reports giving up on the job for good with receipt "zombie-1" |
      | stops                                                         |

  Scenario: A worker that gives up hands the job to the next worker
    Given worker "A" has taken the job
    And worker "A" has rendered copy 1
    When worker "A" reports giving up on the job with receipt "gave-up-1"
    And worker "B" takes the job
    Then worker "B" is given copies 2, 3, 4 and 5 only
    And the order is running

  Scenario: A job cannot be finished while copies are missing; the same report can be sent again later
    Given worker "A" has taken the job
    And worker "A" has rendered copies 1 and 2
    When worker "A" reports the job finished with receipt "done-1"
    Then the report is refused because copies 3, 4 and 5 are still missing
    When worker "A" renders copies 3, 4 and 5
    And worker "A" reports the job finished again with receipt "done-1"
    Then the order is done
